//! Editing the user's overrides as a component: mark, exclude and pin toggle a step, keeping
//! the three consistent (a marked step is not excluded, a pinned step is not excluded), with an
//! undo history. Saving and re-running are the app's (through effects).

use crate::diagnosis::Overrides;

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
}

impl OverrideEditor {
    /// An editor starting from overrides restored from disk (no history).
    pub fn new(current: Overrides) -> OverrideEditor {
        OverrideEditor { current, undo: Vec::new() }
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
