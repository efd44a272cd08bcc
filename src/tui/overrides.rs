//! Editing the user's overrides as a component: mark, exclude and pin toggle a step, keeping
//! the three consistent (a marked step is not excluded, a pinned step is not excluded), with an
//! undo history, and the note of what the last edit did (and where it was saved) that the status
//! line shows once its re-run is done. Saving and re-running are the app's (through effects).

use super::status::Level;
use super::store;
use crate::diagnosis::Overrides;

/// What the last edit did, shown in the status line until its re-run is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// How it looks.
    pub level: Level,
    /// What was done (and where it was saved, or why it was not).
    pub text: String,
    /// What to do next (shown when no re-run follows).
    pub hint: String,
    /// A re-run follows: its end shows the note again.
    pub rerun: bool,
}

/// An edit of the overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    /// Mark or unmark a step as a candidate.
    Mark,
    /// Exclude a step or include it again.
    Exclude,
    /// Pin a step as the decisive step, or unpin it.
    Pin,
}

/// The overrides with their undo history.
#[derive(Debug, Clone, Default)]
pub struct OverrideEditor {
    /// The current overrides.
    pub current: Overrides,
    undo: Vec<Overrides>,
    /// What the last edit did, until the status line has shown it for good.
    pub note: Option<Note>,
    /// The last save failed: quitting asks first.
    pub unsaved: bool,
}

impl OverrideEditor {
    /// An editor starting from overrides restored from disk (no history).
    pub fn new(current: Overrides) -> OverrideEditor {
        OverrideEditor::with_history(current, Vec::new())
    }

    /// An editor starting from overrides restored from disk with their undo history (oldest
    /// first).
    pub fn with_history(current: Overrides, undo: Vec<Overrides>) -> OverrideEditor {
        OverrideEditor { current, undo, note: None, unsaved: false }
    }

    /// The undo history, oldest first (saved with the overrides).
    pub fn history(&self) -> &[Overrides] {
        &self.undo
    }

    /// Applies an edit to step `s`; returns what was done, in words for the status line.
    pub fn apply(&mut self, edit: Edit, s: usize) -> String {
        let mut o = self.current.clone();
        let msg = match edit {
            Edit::Mark if toggle(&mut o.marked, s) => format!("marked step {s} as a candidate"),
            Edit::Mark => format!("unmarked step {s}"),
            Edit::Exclude if toggle(&mut o.excluded, s) => format!("excluded step {s}"),
            Edit::Exclude => format!("included step {s} again"),
            Edit::Pin if o.pinned == Some(s) => {
                o.pinned = None;
                format!("unpinned step {s}")
            }
            Edit::Pin => {
                o.pinned = Some(s);
                format!("pinned step {s} as the decisive step")
            }
        };
        match edit {
            Edit::Mark => o.excluded.retain(|&x| x != s),
            Edit::Exclude => {
                o.marked.retain(|&x| x != s);
                if o.pinned == Some(s) && o.excluded.contains(&s) {
                    o.pinned = None;
                }
            }
            Edit::Pin if o.pinned == Some(s) => o.excluded.retain(|&x| x != s),
            Edit::Pin => {}
        }
        self.undo.push(std::mem::replace(&mut self.current, o));
        msg
    }

    /// Goes back to the overrides before the last edit; false when there is none.
    pub fn undo(&mut self) -> bool {
        match self.undo.pop() {
            Some(prev) => {
                self.current = prev;
                true
            }
            None => false,
        }
    }

    /// Starts the note of an edit: `text` what was done, `hint` what to do next, `rerun` whether
    /// a re-run follows.
    pub fn begin_note(&mut self, text: String, hint: String, rerun: bool) {
        self.note = Some(Note { level: Level::Ok, text, hint, rerun });
    }

    /// The note as the status line shows it, unless a run is `busy` (then its end shows it);
    /// an error shows at once.
    pub fn note_status(&self, busy: bool) -> Option<(Level, String)> {
        let n = self.note.as_ref()?;
        (!busy || n.level == Level::Error).then(|| (n.level, format!("{}{}", n.text, n.hint)))
    }

    /// Adds the result of saving to the note: where the overrides went, or, first, that they
    /// could not be saved (an error, never silent; the cause after it). When the save merged
    /// another window's overrides, they become the current ones (undo goes back to this
    /// window's) and the note says so as a warning. Without a re-run the note is done after
    /// this; returns the status to show.
    pub fn saved(&mut self, result: anyhow::Result<store::Saved>, busy: bool) -> Option<(Level, String)> {
        self.unsaved = result.is_err();
        let (mut level, mut what) = match &result {
            Ok(store::Saved { path, fallback: None, .. }) => (Level::Ok, format!("; saved to {}", path.display())),
            Ok(store::Saved { path, fallback: Some(why), .. }) => {
                // The reason first: a long path may be shortened in the status line.
                (Level::Warn, format!("; {}: saved to {}", why.reason(), path.display()))
            }
            Err(e) => (Level::Error, format!("{e:#}")),
        };
        if let Ok(saved) = &result {
            if let Some(m) = &saved.merged {
                self.undo.push(std::mem::replace(&mut self.current, m.clone()));
            }
            if !saved.warnings.is_empty() {
                level = Level::Warn;
                what = format!("; {}{what}", saved.warnings.join("; "));
            }
        }
        let note = self.note.get_or_insert_with(|| Note {
            level: Level::Ok,
            text: "overrides changed".into(),
            hint: String::new(),
            rerun: false,
        });
        note.level = level;
        if level == Level::Error {
            // What failed first, so that it stays on screen.
            note.text = format!("could not save the overrides (kept until you quit): {what}; {}", note.text);
        } else {
            note.text.push_str(&what);
        }
        let show = self.note_status(busy);
        if self.note.as_ref().is_some_and(|n| !n.rerun) {
            self.note = None;
        }
        show
    }

    /// Whether step `s` is `(marked, excluded, pinned)` by the user.
    pub fn marks(&self, s: usize) -> (bool, bool, bool) {
        let o = &self.current;
        (o.marked.contains(&s), o.excluded.contains(&s), o.pinned == Some(s))
    }
}

/// Adds `s` to the list or removes it; true when it was added.
fn toggle(list: &mut Vec<usize>, s: usize) -> bool {
    if let Some(i) = list.iter().position(|&x| x == s) {
        list.remove(i);
        false
    } else {
        list.push(s);
        list.sort_unstable();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_stay_consistent_and_undo() {
        let mut e = OverrideEditor::default();
        assert_eq!(e.apply(Edit::Exclude, 4), "excluded step 4");
        assert_eq!(e.apply(Edit::Pin, 4), "pinned step 4 as the decisive step");
        assert_eq!(e.current, Overrides { marked: vec![], excluded: vec![], pinned: Some(4) }, "a pin includes");
        e.apply(Edit::Exclude, 4);
        assert_eq!(e.current, Overrides { marked: vec![], excluded: vec![4], pinned: None }, "an exclusion unpins");
        e.apply(Edit::Mark, 4);
        assert_eq!(e.marks(4), (true, false, false));
        assert!(e.undo() && e.undo());
        assert_eq!(e.current.pinned, Some(4));
        assert!(e.undo() && e.undo());
        assert!(e.current.is_empty());
        assert!(!e.undo());
    }
}
