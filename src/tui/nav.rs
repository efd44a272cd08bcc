//! Navigation as a component: which view is shown, which pane has the focus, the selected phase,
//! step, edge and list row, the evidence scroll, the step reference selected in a prose view, the
//! lists' first visible rows, and the jump history (`ctrl-o` goes back to where a jump started,
//! like vim's jump list).
//!
//! Like a ratatui `ListState`, it holds only positions: what the lists contain comes in through
//! [`Extent`], which the app fills from the trajectory and the results before each action.

use std::ops::Range;

use super::action::Action;

/// The views. To add one: a variant here and in [`View::ALL`], an [`Action`] with a default key,
/// and its text in `view::text::view_text`; a view that is its text is then laid out and drawn as
/// it is (see `docs/ARCHITECTURE.md`, "A TUI view").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum View {
    /// Phases, steps, evidence and dependencies.
    Hierarchy,
    /// Candidates, pruned or kept, with their verification.
    Candidates,
    /// Roles around the decisive step.
    Roles,
    /// The task-conditioned prior π.
    Prior,
    /// The verdict.
    Verdict,
    /// Every method's verdict side by side, with the selected method's details.
    Methods,
}

impl View {
    /// All views in tab order.
    pub const ALL: [View; 6] =
        [View::Hierarchy, View::Candidates, View::Roles, View::Prior, View::Verdict, View::Methods];

    /// The tab title.
    pub fn title(self) -> &'static str {
        match self {
            View::Hierarchy => "Hierarchy",
            View::Candidates => "Candidates",
            View::Roles => "Roles",
            View::Prior => "Prior",
            View::Verdict => "Verdict",
            View::Methods => "Methods",
        }
    }

    /// The view's name in lower case, for the status line ("the verdict").
    pub fn name(self) -> &'static str {
        match self {
            View::Hierarchy => "hierarchy",
            View::Candidates => "candidates",
            View::Roles => "roles",
            View::Prior => "prior",
            View::Verdict => "verdict",
            View::Methods => "methods",
        }
    }

    /// The action that opens the view.
    pub fn action(self) -> Action {
        match self {
            View::Hierarchy => Action::ViewHierarchy,
            View::Candidates => Action::ViewCandidates,
            View::Roles => Action::ViewRoles,
            View::Prior => Action::ViewPrior,
            View::Verdict => Action::ViewVerdict,
            View::Methods => Action::ViewMethods,
        }
    }

    /// The view's position in [`View::ALL`] (and in [`Nav::scroll`]).
    pub fn index(self) -> usize {
        View::ALL.iter().position(|v| *v == self).unwrap_or(0)
    }

    /// The view after this one (`next`) or before it, wrapping around.
    pub fn cycle(self, next: bool) -> View {
        let n = View::ALL.len();
        let i = View::ALL.iter().position(|v| *v == self).unwrap_or(0);
        View::ALL[if next { (i + 1) % n } else { (i + n - 1) % n }]
    }
}

/// The panes of the hierarchy view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pane {
    /// `M_hi`.
    Phases,
    /// `M_mid`.
    Steps,
    /// `M_lo`.
    Evidence,
    /// The selected step's dependency edges.
    Edges,
}

impl Pane {
    /// Focus order.
    pub const ALL: [Pane; 4] = [Pane::Phases, Pane::Steps, Pane::Evidence, Pane::Edges];

    /// The pane's position in [`Pane::ALL`] (and in the layout's pane areas).
    pub fn index(self) -> usize {
        Pane::ALL.iter().position(|p| *p == self).unwrap_or(0)
    }
}

/// The first visible row of each list, kept between frames so that lists scroll smoothly.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offsets {
    /// The phases list.
    pub phase: usize,
    /// The steps list (relative to the phase's first step).
    pub step: usize,
    /// The dependencies list.
    pub edge: usize,
    /// The candidates, roles or methods list.
    pub list: usize,
}

/// A place the jump history can return to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The view.
    pub view: View,
    /// The focused pane of the hierarchy view.
    pub focus: Pane,
    /// The selected step.
    pub step: usize,
    /// The selected row of a list view.
    pub list_sel: usize,
    /// The selected step reference of a prose view.
    pub link: Option<usize>,
}

/// What the lists hold, for moving through them: filled by the app before an action.
#[derive(Debug, Clone, Default)]
pub struct Extent {
    /// The step range of each phase, in order (contiguous).
    pub phases: Vec<Range<usize>>,
    /// The number of steps that can be selected.
    pub n_steps: usize,
    /// The other step of each listed dependency edge of the selected step (when the edges pane
    /// has the focus).
    pub edges: Vec<usize>,
    /// The number of wrapped evidence lines of the selected step (when the evidence pane has the
    /// focus).
    pub evidence_lines: usize,
    /// The rows of the current list view.
    pub list_len: usize,
    /// The step the selected list row stands for (Enter goes there).
    pub row_step: Option<usize>,
    /// The step references of the current prose (the verdict view, or the selected row's detail),
    /// in reading order.
    pub links: Vec<usize>,
    /// Visible rows of the focused list (for paging).
    pub page_rows: usize,
    /// The wrapped lines of the current view's text (the verdict, the prior, the selected row's
    /// detail in the candidates and methods views), for scrolling it.
    pub text_lines: usize,
    /// Visible lines of that text.
    pub text_rows: usize,
}

/// What a navigation did that the app reports in the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Moved {
    /// Nothing worth a message.
    Quiet,
    /// Jumped to a step; the text says from where ("the verdict's step reference 2 of 4").
    Jumped {
        /// The step jumped to.
        step: usize,
        /// Where the jump came from, for the status line.
        from: String,
    },
    /// A step reference of the prose is selected.
    Link {
        /// Its position among the references (0-based).
        index: usize,
        /// How many references there are.
        of: usize,
        /// The step it names.
        step: usize,
    },
    /// `tab` found no step reference to select in the current prose.
    NoLinks,
    /// Went back (`true`) or forward through the jump history to a step in a view.
    History {
        /// Back (`true`) or forward.
        back: bool,
        /// The place returned to.
        to: Place,
    },
    /// The jump history has nothing in that direction.
    HistoryEmpty {
        /// Back (`true`) or forward.
        back: bool,
    },
}

/// The navigation state.
#[derive(Debug, Clone)]
pub struct Nav {
    /// The current view.
    pub view: View,
    /// The focused pane of the hierarchy view.
    pub focus: Pane,
    /// The selected phase.
    pub phase: usize,
    /// The selected step.
    pub step: usize,
    /// First visible evidence line.
    pub evidence_scroll: usize,
    /// The selected edge in the dependencies pane.
    pub edge: usize,
    /// The selected row of a list view (candidates, roles, methods; the verdict view's step
    /// references).
    pub list_sel: usize,
    /// The selected step reference in the selected row's detail (candidates, roles, methods);
    /// `None` when Enter goes to the row's own step.
    pub link: Option<usize>,
    /// The lists' first visible rows.
    pub offsets: Offsets,
    /// The first visible line of each view's text, by [`View::index`]: the verdict, the prior,
    /// the selected row's detail (candidates, methods); clamped to the text's height when it
    /// moves and when it is drawn.
    pub scroll: [usize; 6],
    back: Vec<Place>,
    forward: Vec<Place>,
}

/// How many places the jump history keeps.
const HISTORY: usize = 100;

impl Default for Nav {
    fn default() -> Nav {
        Nav {
            view: View::Hierarchy,
            focus: Pane::Phases,
            phase: 0,
            step: 0,
            evidence_scroll: 0,
            edge: 0,
            list_sel: 0,
            link: None,
            offsets: Offsets::default(),
            scroll: [0; 6],
            back: Vec::new(),
            forward: Vec::new(),
        }
    }
}

impl Nav {
    /// Where the user is now.
    pub fn place(&self) -> Place {
        Place { view: self.view, focus: self.focus, step: self.step, list_sel: self.list_sel, link: self.link }
    }

    /// How many places `ctrl-o` can go back through.
    pub fn history_len(&self) -> usize {
        self.back.len()
    }

    /// Switches the view, starting its list at `row` (the same view keeps its selection).
    pub fn set_view(&mut self, v: View, row: usize) {
        if v != self.view {
            self.view = v;
            self.list_sel = row;
            self.link = None;
            self.offsets.list = 0;
        }
    }

    /// Selects a phase and its first step.
    pub fn select_phase(&mut self, p: usize, ext: &Extent) {
        let Some(start) = ext.phases.get(p).map(|r| r.start) else { return };
        self.phase = p;
        self.set_step(start);
    }

    /// Selects a step and its phase (nothing when `s` is out of range).
    pub fn select_step(&mut self, s: usize, ext: &Extent) {
        if s >= ext.n_steps {
            return;
        }
        self.phase = phase_of(&ext.phases, s);
        self.set_step(s);
    }

    fn set_step(&mut self, s: usize) {
        if s != self.step {
            self.evidence_scroll = 0;
            self.edge = 0;
        }
        self.step = s;
    }

    /// Jumps to step `s` in the hierarchy view, remembering where the jump started; `from` says
    /// where it came from for the status line. Nothing when `s` is out of range.
    pub fn jump(&mut self, s: usize, ext: &Extent, from: impl Into<String>) -> Moved {
        if s >= ext.n_steps {
            return Moved::Quiet;
        }
        self.remember();
        self.select_step(s, ext);
        self.view = View::Hierarchy;
        self.link = None;
        if self.focus == Pane::Phases {
            self.focus = Pane::Steps;
        }
        Moved::Jumped { step: s, from: from.into() }
    }

    /// Records the current place before a jump (a new jump clears the forward history).
    fn remember(&mut self) {
        let here = self.place();
        if self.back.last() != Some(&here) {
            self.back.push(here);
            if self.back.len() > HISTORY {
                self.back.remove(0);
            }
        }
        self.forward.clear();
    }

    /// Goes back (`ctrl-o`) or forward through the jump history.
    pub fn history(&mut self, back: bool, ext: &Extent) -> Moved {
        let (from, to) = if back { (&mut self.back, &mut self.forward) } else { (&mut self.forward, &mut self.back) };
        let Some(p) = from.pop() else { return Moved::HistoryEmpty { back } };
        to.push(Place {
            view: self.view,
            focus: self.focus,
            step: self.step,
            list_sel: self.list_sel,
            link: self.link,
        });
        self.view = p.view;
        self.focus = p.focus;
        self.select_step(p.step, ext);
        self.list_sel = p.list_sel;
        self.link = p.link;
        Moved::History { back, to: p }
    }

    /// Moves the selection for a navigation action (up, down, page, top, bottom, enter, back,
    /// pane and reference cycling).
    pub fn navigate(&mut self, a: Action, ext: &Extent) -> Moved {
        if self.view != View::Hierarchy {
            return self.navigate_list(a, ext);
        }
        // The text scroll keys page the focused pane.
        let a = match a {
            Action::ScrollDown => Action::PageDown,
            Action::ScrollUp => Action::PageUp,
            a => a,
        };
        let moved = match self.focus {
            Pane::Phases => self.nav_phases(a, ext),
            Pane::Steps => self.nav_steps(a, ext),
            Pane::Evidence => self.nav_evidence(a, ext),
            Pane::Edges => self.nav_edges(a, ext),
        };
        match a {
            Action::NextPane => self.focus = Pane::ALL[(self.focus.index() + 1) % 4],
            Action::PrevPane => self.focus = Pane::ALL[(self.focus.index() + 3) % 4],
            _ => {}
        }
        moved
    }

    fn moved(cur: usize, len: usize, a: Action, page: usize) -> usize {
        let last = len.saturating_sub(1);
        let page = page.max(2) - 1;
        match a {
            Action::Up => cur.saturating_sub(1),
            Action::Down => (cur + 1).min(last),
            Action::PageUp => cur.saturating_sub(page),
            Action::PageDown => (cur + page).min(last),
            Action::Top => 0,
            Action::Bottom => last,
            _ => cur,
        }
    }

    fn nav_phases(&mut self, a: Action, ext: &Extent) -> Moved {
        if a == Action::Enter {
            self.focus = Pane::Steps;
        } else {
            let p = Nav::moved(self.phase, ext.phases.len(), a, ext.page_rows);
            if p != self.phase {
                self.select_phase(p, ext);
            }
        }
        Moved::Quiet
    }

    fn nav_steps(&mut self, a: Action, ext: &Extent) -> Moved {
        match a {
            Action::Enter => self.focus = Pane::Evidence,
            Action::Back => self.focus = Pane::Phases,
            Action::Top | Action::Bottom => {
                if let Some(r) = ext.phases.get(self.phase) {
                    let s = if a == Action::Top { r.start } else { r.end.saturating_sub(1) };
                    self.select_step(s, ext);
                }
            }
            _ => {
                let s = Nav::moved(self.step, ext.n_steps, a, ext.page_rows);
                self.select_step(s, ext);
            }
        }
        Moved::Quiet
    }

    fn nav_evidence(&mut self, a: Action, ext: &Extent) -> Moved {
        let page = ext.page_rows.max(2) - 1;
        let max = ext.evidence_lines.saturating_sub(ext.page_rows);
        self.evidence_scroll = match a {
            Action::Enter => {
                self.focus = Pane::Edges;
                self.evidence_scroll
            }
            Action::Back => {
                self.focus = Pane::Steps;
                self.evidence_scroll
            }
            Action::Up => self.evidence_scroll.saturating_sub(1),
            Action::Down => self.evidence_scroll + 1,
            Action::PageUp => self.evidence_scroll.saturating_sub(page),
            Action::PageDown => self.evidence_scroll + page,
            Action::Top => 0,
            Action::Bottom => max,
            _ => self.evidence_scroll,
        }
        .min(max);
        Moved::Quiet
    }

    fn nav_edges(&mut self, a: Action, ext: &Extent) -> Moved {
        match a {
            Action::Enter => {
                if let Some(&s) = ext.edges.get(self.edge) {
                    let from = format!("the dependencies of step {}", self.step);
                    let moved = self.jump(s, ext, from);
                    self.focus = Pane::Steps;
                    return moved;
                }
            }
            Action::Back => self.focus = Pane::Evidence,
            _ => self.edge = Nav::moved(self.edge, ext.edges.len(), a, ext.page_rows),
        }
        Moved::Quiet
    }

    /// Moving in a list view. The verdict view's rows are its step references; in the other
    /// lists `tab`/`backtab` select the step references of the selected row's detail, and Enter
    /// goes to the selected reference, else to the row's step.
    fn navigate_list(&mut self, a: Action, ext: &Extent) -> Moved {
        use Action::*;
        let verdict = self.view == View::Verdict;
        match a {
            // The roles view has no text below its list: the scroll keys page the list.
            ScrollDown | ScrollUp if self.view == View::Roles => {
                return self.navigate_list(if a == ScrollDown { PageDown } else { PageUp }, ext);
            }
            ScrollDown | ScrollUp => {
                self.scroll_text(a, ext);
                return Moved::Quiet;
            }
            // The verdict and the prior are text: paging scrolls it (up and down move through the
            // verdict's step references).
            PageDown | PageUp | Top | Bottom if verdict || self.view == View::Prior => {
                self.scroll_text(a, ext);
                return Moved::Quiet;
            }
            Up | Down if self.view == View::Prior => {
                self.scroll_text(a, ext);
                return Moved::Quiet;
            }
            _ => {}
        }
        match a {
            Action::Enter => {
                let (target, from) = match (verdict, self.link) {
                    (true, _) => (ext.links.get(self.list_sel).copied(), self.link_origin(self.list_sel, ext)),
                    (false, Some(k)) => (ext.links.get(k).copied(), self.link_origin(k, ext)),
                    (false, None) => (ext.row_step, format!("the {} view", self.view.name())),
                };
                match target {
                    Some(s) => self.jump(s, ext, from),
                    None => Moved::Quiet,
                }
            }
            Action::Back if !verdict && self.link.is_some() => {
                self.link = None;
                Moved::Quiet
            }
            Action::Back => {
                self.view = View::Hierarchy;
                Moved::Quiet
            }
            Action::NextPane | Action::PrevPane => self.cycle_link(a == Action::NextPane, ext),
            _ => {
                let len = if verdict { ext.links.len() } else { ext.list_len };
                let sel = Nav::moved(self.list_sel, len, a, ext.page_rows);
                if sel != self.list_sel {
                    self.list_sel = sel;
                    self.link = None;
                    if !verdict {
                        // Another row: its detail starts at its top.
                        self.scroll[self.view.index()] = 0;
                    }
                }
                if verdict {
                    return ext.links.get(sel).map_or(Moved::Quiet, |&step| Moved::Link {
                        index: sel,
                        of: ext.links.len(),
                        step,
                    });
                }
                Moved::Quiet
            }
        }
    }

    /// Scrolls the current view's text by a line, a page, or to its top or end, within its
    /// height.
    fn scroll_text(&mut self, a: Action, ext: &Extent) {
        use Action::*;
        let max = ext.text_lines.saturating_sub(ext.text_rows);
        let page = ext.text_rows.max(2) - 1;
        let at = &mut self.scroll[self.view.index()];
        let cur = (*at).min(max);
        *at = match a {
            Up => cur.saturating_sub(1),
            Down => cur + 1,
            PageUp | ScrollUp => cur.saturating_sub(page),
            PageDown | ScrollDown => cur + page,
            Top => 0,
            Bottom => max,
            _ => cur,
        }
        .min(max);
    }

    /// Brings the text line `line` into view (a selected step reference), scrolling as little as
    /// possible.
    pub fn show_text_line(&mut self, line: usize, rows: usize) {
        let at = &mut self.scroll[self.view.index()];
        if line < *at {
            *at = line;
        } else if rows > 0 && line >= *at + rows {
            *at = line + 1 - rows;
        }
    }

    /// Selects the next (or previous) step reference; after the last one, none (Enter goes to the
    /// row's step again).
    fn cycle_link(&mut self, next: bool, ext: &Extent) -> Moved {
        let n = ext.links.len();
        if n == 0 {
            return Moved::NoLinks;
        }
        if self.view == View::Verdict {
            self.list_sel = if next { (self.list_sel + 1) % n } else { (self.list_sel + n - 1) % n };
            return Moved::Link { index: self.list_sel, of: n, step: ext.links[self.list_sel] };
        }
        self.link = match (self.link, next) {
            (None, true) => Some(0),
            (None, false) => Some(n - 1),
            (Some(k), true) => (k + 1 < n).then_some(k + 1),
            (Some(k), false) => k.checked_sub(1),
        };
        match self.link {
            Some(k) => Moved::Link { index: k, of: n, step: ext.links[k] },
            None => Moved::Quiet,
        }
    }

    fn link_origin(&self, k: usize, ext: &Extent) -> String {
        let what = if self.view == View::Verdict { "the verdict" } else { self.view.name() };
        format!("step reference {} of {} in {what}", k + 1, ext.links.len())
    }
}

/// The index of the phase holding `step` (binary search: phases are contiguous).
pub fn phase_of(phases: &[Range<usize>], step: usize) -> usize {
    phases.partition_point(|p| p.end <= step).min(phases.len().saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext() -> Extent {
        Extent { phases: vec![0..3, 3..8, 8..10], n_steps: 10, page_rows: 5, ..Extent::default() }
    }

    #[test]
    fn jumps_are_remembered_and_ctrl_o_returns() {
        let e = ext();
        let mut n = Nav::default();
        n.select_step(2, &e);
        n.set_view(View::Verdict, 1);
        let links = Extent { links: vec![4, 9], ..e.clone() };
        assert_eq!(
            n.navigate(Action::Enter, &links),
            Moved::Jumped { step: 9, from: "step reference 2 of 2 in the verdict".into() }
        );
        assert_eq!((n.view, n.step, n.phase, n.focus), (View::Hierarchy, 9, 2, Pane::Steps));
        assert_eq!(n.history_len(), 1);
        let Moved::History { back: true, to } = n.history(true, &e) else { panic!("went back") };
        assert_eq!((to.view, to.step, to.list_sel), (View::Verdict, 2, 1));
        assert_eq!((n.view, n.step, n.list_sel), (View::Verdict, 2, 1));
        assert!(matches!(n.history(false, &e), Moved::History { back: false, to } if to.step == 9));
        assert_eq!((n.view, n.step), (View::Hierarchy, 9));
        assert_eq!(n.history(false, &e), Moved::HistoryEmpty { back: false });
    }

    #[test]
    fn the_text_scroll_is_kept_per_view_and_clamped_to_the_text() {
        let e = Extent { text_lines: 30, text_rows: 10, list_len: 3, ..ext() };
        let mut n = Nav::default();
        n.set_view(View::Verdict, 0);
        n.navigate(Action::ScrollDown, &e);
        assert_eq!(n.scroll[View::Verdict.index()], 9);
        n.navigate(Action::Bottom, &e);
        n.navigate(Action::PageDown, &e);
        assert_eq!(n.scroll[View::Verdict.index()], 20, "clamped: the last line stays at the bottom");
        n.navigate(Action::Top, &e);
        assert_eq!(n.scroll[View::Verdict.index()], 0);
        n.navigate(Action::Bottom, &e);
        // The candidates view keeps its own offset; its list moves on j, which resets its detail.
        n.set_view(View::Candidates, 0);
        n.navigate(Action::ScrollDown, &e);
        assert_eq!((n.scroll[View::Candidates.index()], n.list_sel), (9, 0));
        n.navigate(Action::Down, &e);
        assert_eq!((n.scroll[View::Candidates.index()], n.list_sel), (0, 1));
        assert_eq!(n.scroll[View::Verdict.index()], 20);
    }

    #[test]
    fn tab_cycles_the_references_of_a_row_and_enter_follows_the_selected_one() {
        let e = Extent { list_len: 3, row_step: Some(5), links: vec![1, 7], ..ext() };
        let mut n = Nav::default();
        n.set_view(View::Candidates, 0);
        assert_eq!(n.navigate(Action::NextPane, &e), Moved::Link { index: 0, of: 2, step: 1 });
        assert_eq!(n.navigate(Action::NextPane, &e), Moved::Link { index: 1, of: 2, step: 7 });
        assert_eq!(n.navigate(Action::NextPane, &e), Moved::Quiet, "past the last: back to the row");
        assert_eq!(n.link, None);
        assert_eq!(n.navigate(Action::PrevPane, &e), Moved::Link { index: 1, of: 2, step: 7 });
        assert!(matches!(n.navigate(Action::Enter, &e), Moved::Jumped { step: 7, .. }));
        n.set_view(View::Candidates, 0);
        assert!(matches!(n.navigate(Action::Enter, &e), Moved::Jumped { step: 5, .. }), "no reference: the row's step");
    }
}
