//! The offline findings and the verdict they lead to, on real files and small real-shaped runs,
//! in one test binary (each file below was its own binary; one binary links the library once):
//! - `values_in_context`: no verdict or finding quotes a flag, a query, a line number or an id as
//!   a stated value (docs/METHODS.md, "Values in context"), and tool errors written in content;
//! - `actions`: rejected and unconfirmed state changes, recovered lookups, unavailable values and
//!   miscounts (docs/METHODS.md, "Findings about actions and grounding");
//! - `claims`: what an agent says that is no failure (a courtesy apology, a hedge the tool wrote
//!   in another form, a duration between a record's timestamps, a rounded figure, warnings called
//!   harmless), each beside its faulty twin;
//! - `coding`: coding-agent sessions: the reported failure reproduced, an edit judged by the check
//!   after it, a claim that the tests pass;
//! - `first_user_runs`: kinds of fault first users wrote into their runs (an edit outside the
//!   traceback, a cluster change on the current context, a plan that skips a procedure's step,
//!   a conversion the wrong way round, a stale stock figure, a misattributed quote…), each with
//!   its correct twin;
//! - `instructions`: a subset of the tests reported as the full suite, a search of part of the
//!   folders asked for, a report that leaves out hits of its own search, a change of a path the
//!   user protected, a change the user refused made another way;
//! - `delegation`: a hand-off against the delegating agent's routing instructions, or one that
//!   leaves out a version the user stressed;
//! - `derived`: values worked out from sourced values (a split, a ratio as a percentage, a unit
//!   named by its JSON member), the first actions of a run with no task recorded, a count against
//!   the rows an SQL query printed;
//! - `lookup`: a lookup an agent claims with no tool call, tool output or page read before it;
//! - `read_and_computed`: a figure read from the wrong column of a table, code that prints a mean
//!   as the median;
//! - `records`: a message that pairs an identifier with another record's item, a state change
//!   on a record whose own lookup breaks what the user insisted on, a call that picks a listed
//!   record against the date, name or code the user gave while another record holds it;
//! - `reports`: a worker's report of an outcome its own tool output denies, and the agent that
//!   relays it;
//! - `told_and_booked`: a time promised that the tool left empty, a booking in another zone than
//!   the one checked, a repaired query and a share of two returned counts (no failure);
//! - `verdict`: the ranking deciding undiscriminated verdicts, the final output, assertions,
//!   progress and "no failure found" (docs/METHODS.md, FALAT).

#[path = "findings/actions.rs"]
mod actions;
#[path = "findings/booked_and_queried.rs"]
mod booked_and_queried;
#[path = "findings/chat.rs"]
mod chat;
#[path = "findings/claims.rs"]
mod claims;
#[path = "findings/coding.rs"]
mod coding;
#[path = "findings/delegation.rs"]
mod delegation;
#[path = "findings/derived.rs"]
mod derived;
#[path = "findings/first_user_runs.rs"]
mod first_user_runs;
#[path = "findings/instructions.rs"]
mod instructions;
#[path = "findings/lookup.rs"]
mod lookup;
#[path = "findings/read_and_computed.rs"]
mod read_and_computed;
#[path = "findings/records.rs"]
mod records;
#[path = "findings/reports.rs"]
mod reports;
#[path = "findings/told_and_booked.rs"]
mod told_and_booked;
#[path = "findings/values_in_context.rs"]
mod values_in_context;
#[path = "findings/verdict.rs"]
mod verdict;
