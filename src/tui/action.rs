//! What a key can ask for. The key map file names these actions in snake_case
//! (`down = ["j", "down"]`), and the help overlay lists them with their descriptions.

use serde::Deserialize;

/// A user action. Every variant can be bound to keys in the key map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Leave the program.
    Quit,
    /// Show or hide the help overlay.
    Help,
    /// Move the selection up (or scroll up).
    Up,
    /// Move the selection down (or scroll down).
    Down,
    /// Up one page.
    PageUp,
    /// Down one page.
    PageDown,
    /// Scroll the view's text (the verdict, the prior, the selected row's detail) down a page;
    /// in the hierarchy view, down a page.
    ScrollDown,
    /// Scroll the view's text up a page; in the hierarchy view, up a page.
    ScrollUp,
    /// Suspend the program (the shell's `fg` resumes it).
    Suspend,
    /// To the first row.
    Top,
    /// To the last row.
    Bottom,
    /// Drill down (phase to steps to evidence) or jump to the selected item.
    Enter,
    /// Go back up one level.
    Back,
    /// Focus the next pane.
    NextPane,
    /// Focus the previous pane.
    PrevPane,
    /// Search step content; in the candidates view, filter the candidates.
    Search,
    /// Next search match.
    SearchNext,
    /// Previous search match.
    SearchPrev,
    /// Jump to a step by number.
    JumpToStep,
    /// Select the decisive step in the hierarchy view, from any view.
    GoToDecisive,
    /// Go back to where the last jump started (vim's `ctrl-o`).
    JumpBack,
    /// Go forward again through the jumps gone back from.
    JumpForward,
    /// Show every status message of the session, whole (the status line may cut a long one).
    Messages,
    /// Sort the candidates by the next key (score, step, agent, state).
    Sort,
    /// Copy the selected step to the clipboard (OSC 52).
    Copy,
    /// Run the whole pipeline.
    RunAll,
    /// Run stage 1: prior and hierarchy.
    RunPrior,
    /// Run stage 2: dependencies and pruning.
    RunDependencies,
    /// Run stage 3: verification.
    RunVerification,
    /// Run stage 4: local re-search.
    RunResearch,
    /// Run every method (FALAT, ECHO, DeFA, the baselines) on the trajectory.
    RunMethods,
    /// Cancel the running stage.
    Cancel,
    /// Mark or unmark the selected step as a candidate.
    Mark,
    /// Exclude or include the selected step.
    Exclude,
    /// Pin or unpin the selected step as the decisive step.
    Pin,
    /// Undo the last override.
    Undo,
    /// Export the Markdown and JSON reports beside the trace.
    Export,
    /// The hierarchy view.
    ViewHierarchy,
    /// The candidates view.
    ViewCandidates,
    /// The roles view.
    ViewRoles,
    /// The prior view.
    ViewPrior,
    /// The verdict view.
    ViewVerdict,
    /// The methods view.
    ViewMethods,
    /// The next view.
    NextView,
    /// The previous view.
    PrevView,
}

/// A group of actions in the help overlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Moving around.
    Navigate,
    /// Views.
    Views,
    /// Pipeline runs.
    Pipeline,
    /// Manual overrides.
    Overrides,
    /// Everything else.
    General,
}

impl Group {
    /// The heading in the help overlay.
    pub fn title(self) -> &'static str {
        match self {
            Group::Navigate => "navigate",
            Group::Views => "views",
            Group::Pipeline => "pipeline",
            Group::Overrides => "overrides",
            Group::General => "general",
        }
    }
}

impl Action {
    /// Every action, in help order.
    pub const ALL: [Action; 45] = [
        Action::Up,
        Action::Down,
        Action::PageUp,
        Action::PageDown,
        Action::ScrollUp,
        Action::ScrollDown,
        Action::Top,
        Action::Bottom,
        Action::Enter,
        Action::Back,
        Action::NextPane,
        Action::PrevPane,
        Action::Search,
        Action::SearchNext,
        Action::SearchPrev,
        Action::JumpToStep,
        Action::GoToDecisive,
        Action::JumpBack,
        Action::JumpForward,
        Action::Sort,
        Action::ViewHierarchy,
        Action::ViewCandidates,
        Action::ViewRoles,
        Action::ViewPrior,
        Action::ViewVerdict,
        Action::ViewMethods,
        Action::NextView,
        Action::PrevView,
        Action::RunAll,
        Action::RunPrior,
        Action::RunDependencies,
        Action::RunVerification,
        Action::RunResearch,
        Action::RunMethods,
        Action::Cancel,
        Action::Mark,
        Action::Exclude,
        Action::Pin,
        Action::Undo,
        Action::Export,
        Action::Copy,
        Action::Messages,
        Action::Help,
        Action::Suspend,
        Action::Quit,
    ];

    /// The snake_case name used in the key map file.
    pub fn name(self) -> &'static str {
        use Action::*;
        match self {
            Quit => "quit",
            Help => "help",
            Up => "up",
            Down => "down",
            PageUp => "page_up",
            PageDown => "page_down",
            ScrollDown => "scroll_down",
            ScrollUp => "scroll_up",
            Suspend => "suspend",
            Top => "top",
            Bottom => "bottom",
            Enter => "enter",
            Back => "back",
            NextPane => "next_pane",
            PrevPane => "prev_pane",
            Search => "search",
            SearchNext => "search_next",
            SearchPrev => "search_prev",
            JumpToStep => "jump_to_step",
            GoToDecisive => "go_to_decisive",
            JumpBack => "jump_back",
            JumpForward => "jump_forward",
            Messages => "messages",
            Sort => "sort",
            Copy => "copy",
            RunAll => "run_all",
            RunPrior => "run_prior",
            RunDependencies => "run_dependencies",
            RunVerification => "run_verification",
            RunResearch => "run_research",
            RunMethods => "run_methods",
            Cancel => "cancel",
            Mark => "mark",
            Exclude => "exclude",
            Pin => "pin",
            Undo => "undo",
            Export => "export",
            ViewHierarchy => "view_hierarchy",
            ViewCandidates => "view_candidates",
            ViewRoles => "view_roles",
            ViewPrior => "view_prior",
            ViewVerdict => "view_verdict",
            ViewMethods => "view_methods",
            NextView => "next_view",
            PrevView => "prev_view",
        }
    }

    /// A short lowercase description for the help overlay.
    pub fn describe(self) -> &'static str {
        use Action::*;
        match self {
            Quit => "quit",
            Help => "this help",
            Up => "up",
            Down => "down",
            PageUp => "page up",
            PageDown => "page down (the verdict and prior views: scroll)",
            ScrollDown => "scroll the text down (verdict, prior, a row's detail)",
            ScrollUp => "scroll the text up",
            Suspend => "suspend (the shell's fg resumes)",
            Top => "first row (the verdict and prior views: top)",
            Bottom => "last row (the verdict and prior views: end)",
            Enter => "drill down / jump to the item or step reference",
            Back => "back up",
            NextPane => "next pane / next step reference",
            PrevPane => "previous pane / previous reference",
            Search => "search steps / filter candidates",
            SearchNext => "next match",
            SearchPrev => "previous match",
            JumpToStep => "jump to step number",
            GoToDecisive => "go to the decisive step",
            JumpBack => "back to where the jump started",
            JumpForward => "forward again",
            Messages => "all messages, whole",
            Sort => "sort candidates (score, step, agent, state)",
            Copy => "copy step (osc 52)",
            RunAll => "run the whole pipeline",
            RunPrior => "run prior + hierarchy",
            RunDependencies => "run dependencies + pruning",
            RunVerification => "run verification",
            RunResearch => "run local re-search",
            RunMethods => "run all methods",
            Cancel => "cancel the run",
            Mark => "mark / unmark candidate",
            Exclude => "exclude / include step",
            Pin => "pin / unpin decisive step",
            Undo => "undo last override",
            Export => "export reports",
            ViewHierarchy => "hierarchy",
            ViewCandidates => "candidates",
            ViewRoles => "roles",
            ViewPrior => "prior",
            ViewVerdict => "verdict",
            ViewMethods => "methods side by side",
            NextView => "next view",
            PrevView => "previous view",
        }
    }

    /// The help group of the action.
    pub fn group(self) -> Group {
        use Action::*;
        match self {
            Up | Down | PageUp | PageDown | ScrollDown | ScrollUp | Top | Bottom | Enter | Back | NextPane
            | PrevPane | Search | SearchNext | SearchPrev | JumpToStep | GoToDecisive | JumpBack | JumpForward
            | Sort => Group::Navigate,
            ViewHierarchy | ViewCandidates | ViewRoles | ViewPrior | ViewVerdict | ViewMethods | NextView
            | PrevView => Group::Views,
            RunAll | RunPrior | RunDependencies | RunVerification | RunResearch | RunMethods | Cancel => {
                Group::Pipeline
            }
            Mark | Exclude | Pin | Undo => Group::Overrides,
            Export | Copy | Messages | Help | Suspend | Quit => Group::General,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_serde() {
        for a in Action::ALL {
            let parsed: Action = serde_json::from_value(serde_json::json!(a.name())).expect("name parses");
            assert_eq!(parsed, a);
        }
    }
}
