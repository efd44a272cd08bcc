//! A calculation an agent writes out whose result is wrong: "€2,000 − €640 − €520 = €1,040" (it
//! comes to 840). The operands and the operators are on the page, so the slip is checked, not
//! guessed: every figure worked out from it afterwards (a daily budget, a plan that "fits") only
//! inherits it. docs/METHODS.md, "Grounding".

use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Signal};
use crate::evidence::arithmetic::slips;

/// Step `i`, an agent's own text (a message, a thought, a plan, a delegation: not a tool's call or
/// output, not the user's turn), writes out a calculation whose result is wrong ([`slips`], read
/// once into the step's `miscalculation` flag of `M_mid`). The first slip is the evidence:
/// `writes "2,000 − 640 − 520 = 1,040", which comes to 840`.
pub(super) fn miscalculation(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let s = &ctx.trajectory.steps[i];
    if !ctx.hierarchy.steps[i].flags.miscalculation
        || super::actions::served_person(s)
        || s.role.eq_ignore_ascii_case("system")
    {
        return;
    }
    let Some((written, comes_to)) = slips(&s.content).into_iter().next() else { return };
    out.push(finding(
        Signal::Miscalculation,
        weights::MISCALCULATION,
        format!("writes \"{written}\", which comes to {comes_to}"),
    ));
}
