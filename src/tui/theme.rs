//! Colour themes: named style slots read from TOML (`themes/*.toml`, embedded so they work from
//! any directory, or a user file that overrides some slots of a base theme), and the `NO_COLOR`
//! monochrome form that keeps only bold, reverse and the like.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

use anyhow::{Context, bail};
use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

/// The built-in themes: `(name, TOML text)`.
pub const BUILTIN: [(&str, &str); 3] = [
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("high-contrast", include_str!("../../themes/high-contrast.toml")),
];

/// One slot as written in a theme file; unset fields keep the base theme's value.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StyleSpec {
    fg: Option<String>,
    bg: Option<String>,
    bold: Option<bool>,
    italic: Option<bool>,
    underline: Option<bool>,
    reversed: Option<bool>,
}

/// A theme file: an optional base, the syntect theme name and style slots.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: Option<String>,
    base: Option<String>,
    syntax: Option<String>,
    #[serde(default)]
    styles: BTreeMap<String, StyleSpec>,
}

fn color(s: &str) -> anyhow::Result<Color> {
    Color::from_str(s).map_err(|_| anyhow::anyhow!("unknown colour '{s}' (use a name, an index or #rrggbb)"))
}

fn set(style: Style, m: Modifier, on: Option<bool>) -> Style {
    match on {
        Some(true) => style.add_modifier(m),
        Some(false) => style.remove_modifier(m),
        None => style,
    }
}

impl StyleSpec {
    fn apply(&self, mut style: Style) -> anyhow::Result<Style> {
        if let Some(fg) = &self.fg {
            style = style.fg(color(fg)?);
        }
        if let Some(bg) = &self.bg {
            style = style.bg(color(bg)?);
        }
        style = set(style, Modifier::BOLD, self.bold);
        style = set(style, Modifier::ITALIC, self.italic);
        style = set(style, Modifier::UNDERLINED, self.underline);
        Ok(set(style, Modifier::REVERSED, self.reversed))
    }
}

macro_rules! theme_slots {
    ($($(#[$doc:meta])* $slot:ident),* $(,)?) => {
        /// A resolved theme: one [`Style`] per slot.
        #[derive(Debug, Clone, PartialEq, Default)]
        pub struct Theme {
            /// The theme's name.
            pub name: String,
            /// The syntect theme for code and JSON.
            pub syntax: String,
            /// Set under `NO_COLOR`: no colours anywhere, syntax highlighting off.
            pub mono: bool,
            $($(#[$doc])* pub $slot: Style,)*
        }

        impl Theme {
            /// The slot names a theme file may set.
            pub const SLOTS: &'static [&'static str] = &[$(stringify!($slot)),*];

            fn slot_mut(&mut self, name: &str) -> Option<&mut Style> {
                match name {
                    $(stringify!($slot) => Some(&mut self.$slot),)*
                    _ => None,
                }
            }

            fn slots_mut(&mut self) -> Vec<&mut Style> {
                vec![$(&mut self.$slot),*]
            }
        }
    };
}

theme_slots! {
    /// Plain text.
    text,
    /// Secondary text.
    dim,
    /// Pane borders.
    border,
    /// The border of the focused pane.
    border_focus,
    /// Pane titles.
    title,
    /// The title of the focused pane.
    title_focus,
    /// The selected row in the focused pane.
    selection,
    /// The selected row in other panes.
    selection_unfocused,
    /// The header bar.
    header,
    /// A view tab.
    tab,
    /// The active view tab.
    tab_active,
    /// The status line.
    status,
    /// Key names in hints and help.
    key,
    /// Informational messages.
    info,
    /// Success.
    ok,
    /// Warnings.
    warn,
    /// Errors.
    error,
    /// Extracted values in the evidence.
    value,
    /// Error lines in the evidence.
    error_line,
    /// Code fences.
    code_fence,
    /// Candidate markers.
    candidate,
    /// Pruned candidates.
    pruned,
    /// The ROOT_CAUSE role.
    root_cause,
    /// The PROPAGATION role.
    propagation,
    /// The SYMPTOM role.
    symptom,
    /// The CONTRIBUTING role.
    contributing,
    /// A step pinned by the user.
    pinned,
    /// A step marked by the user.
    marked,
    /// A step excluded by the user.
    excluded,
    /// Search matches.
    search_match,
    /// Protocol edges.
    edge_protocol,
    /// Semantic edges.
    edge_semantic,
    /// Suspicion bars.
    suspicion,
}

impl Theme {
    /// A built-in theme by name (`dark`, `light`, `high-contrast`).
    ///
    /// # Errors
    /// When no built-in theme has that name.
    pub fn builtin(name: &str) -> anyhow::Result<Theme> {
        let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name) else {
            bail!("unknown theme '{name}' (built-in: {})", builtin_names());
        };
        let mut theme = Theme::default();
        theme.apply_text(text).with_context(|| format!("built-in theme {name}"))?;
        Ok(theme)
    }

    /// A theme by built-in name, or from a TOML file when `spec` names an existing file.
    ///
    /// # Errors
    /// When the name is unknown and no such file exists, or the file is invalid.
    pub fn resolve(spec: &str) -> anyhow::Result<Theme> {
        if BUILTIN.iter().any(|(n, _)| *n == spec) {
            return Theme::builtin(spec);
        }
        let path = Path::new(spec);
        if path.is_file() {
            return Theme::from_path(path);
        }
        bail!("unknown theme '{spec}': not a built-in theme ({}) nor a file", builtin_names())
    }

    /// Reads a theme file; its `base` (default `dark`) supplies the slots it does not set.
    ///
    /// # Errors
    /// When the file cannot be read or is not a valid theme.
    pub fn from_path(path: &Path) -> anyhow::Result<Theme> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read theme {}", path.display()))?;
        Theme::from_toml(&text).with_context(|| format!("theme {}", path.display()))
    }

    /// Parses a theme from TOML text over its base theme.
    ///
    /// # Errors
    /// When the text is not a valid theme.
    pub fn from_toml(text: &str) -> anyhow::Result<Theme> {
        let file: ThemeFile = toml::from_str(text)?;
        let mut theme = Theme::builtin(file.base.as_deref().unwrap_or("dark"))?;
        theme.apply_file(&file)?;
        Ok(theme)
    }

    fn apply_text(&mut self, text: &str) -> anyhow::Result<()> {
        let file: ThemeFile = toml::from_str(text)?;
        self.apply_file(&file)
    }

    fn apply_file(&mut self, file: &ThemeFile) -> anyhow::Result<()> {
        if let Some(n) = &file.name {
            self.name = n.clone();
        }
        if let Some(s) = &file.syntax {
            self.syntax = s.clone();
        }
        for (slot, spec) in &file.styles {
            let Some(style) = self.slot_mut(slot) else {
                bail!("unknown style slot '{slot}' (known: {})", Theme::SLOTS.join(", "));
            };
            *style = spec.apply(*style).with_context(|| format!("slot {slot}"))?;
        }
        Ok(())
    }

    /// The `NO_COLOR` form: colours removed, modifiers kept, and reverse/bold added where the
    /// selection, focus and roles must stay visible.
    pub fn monochrome(mut self) -> Theme {
        for s in self.slots_mut() {
            s.fg = None;
            s.bg = None;
        }
        self.mono = true;
        self.selection = self.selection.add_modifier(Modifier::REVERSED | Modifier::BOLD);
        self.selection_unfocused = self.selection_unfocused.add_modifier(Modifier::UNDERLINED);
        self.tab_active = self.tab_active.add_modifier(Modifier::REVERSED | Modifier::BOLD);
        self.border_focus = self.border_focus.add_modifier(Modifier::BOLD);
        self.title_focus = self.title_focus.add_modifier(Modifier::BOLD | Modifier::UNDERLINED);
        self.root_cause = self.root_cause.add_modifier(Modifier::REVERSED | Modifier::BOLD);
        self.search_match = self.search_match.add_modifier(Modifier::REVERSED);
        self.error_line = self.error_line.add_modifier(Modifier::BOLD);
        self
    }

    /// The style of a role.
    pub fn role(&self, role: crate::diagnosis::Role) -> Style {
        use crate::diagnosis::Role;
        match role {
            Role::RootCause => self.root_cause,
            Role::Propagation => self.propagation,
            Role::Symptom => self.symptom,
            Role::Contributing => self.contributing,
        }
    }
}

/// Whether `NO_COLOR` asks for no colours (set and not empty, per no-color.org).
pub fn no_color_requested() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

fn builtin_names() -> String {
    BUILTIN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_themes_parse_and_differ() {
        let dark = Theme::builtin("dark").expect("dark");
        let light = Theme::builtin("light").expect("light");
        let hc = Theme::builtin("high-contrast").expect("high-contrast");
        assert_eq!(dark.name, "dark");
        assert_ne!(dark.selection, light.selection);
        assert_ne!(dark.selection, hc.selection);
        assert_eq!(light.syntax, "InspiredGitHub");
    }

    #[test]
    fn user_file_overrides_some_slots_of_its_base() {
        let t = Theme::from_toml("base = \"light\"\n[styles]\nselection = { bg = \"#ff0000\" }\n").expect("theme");
        let light = Theme::builtin("light").expect("light");
        assert_eq!(t.selection.bg, Some(Color::Rgb(255, 0, 0)));
        assert_eq!(t.selection.fg, light.selection.fg);
        assert_eq!(t.text, light.text);
    }

    #[test]
    fn bad_theme_files_are_reported() {
        let e = Theme::from_toml("[styles]\nnope = {}\n").expect_err("unknown slot");
        assert!(format!("{e:#}").contains("unknown style slot 'nope'"));
        let e = Theme::from_toml("[styles]\ntext = { fg = \"mauve-ish\" }\n").expect_err("bad colour");
        assert!(format!("{e:#}").contains("unknown colour"));
        assert!(Theme::resolve("no-such-theme").is_err());
    }

    #[test]
    fn monochrome_keeps_reverse_and_bold_but_no_colour() {
        let t = Theme::builtin("dark").expect("dark").monochrome();
        assert!(t.mono);
        assert_eq!(t.selection.fg, None);
        assert_eq!(t.selection.bg, None);
        assert!(t.selection.add_modifier.contains(Modifier::REVERSED));
        assert!(t.root_cause.add_modifier.contains(Modifier::BOLD));
    }
}
