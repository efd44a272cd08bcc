//! Times booked at the wrong offset of a time zone with daylight saving: the user asks for "9am
//! my time", the run knows the user's zone (`"timezone": "America/New_York"`), and the call books
//! `2025-03-11T14:00:00Z`, which is 9:00 at the zone's standard offset (UTC−05:00) but 10:00 on
//! that date, when daylight time (UTC−04:00) is in force. The offsets come from the IANA time
//! zone database (bundled with `jiff`). docs/METHODS.md, "Actions".

use std::sync::LazyLock;

use jiff::Timestamp;
use jiff::tz::{Offset, TimeZone};
use regex::Regex;

use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Signal};
use crate::model::StepKind;

/// How many steps back the user's words and the tool results naming a zone are read.
const WINDOW: usize = 80;

/// An IANA zone name (`America/New_York`, `Europe/London`, `America/Argentina/Buenos_Aires`).
static IANA: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(?:Africa|America|Asia|Atlantic|Australia|Europe|Indian|Pacific)/[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_]+)?",
    )
    .unwrap()
});

/// A clock time in the user's words: `9am`, `9:30 pm`, `14:00`. Groups: hour, minute, `a`/`p`.
static ASKED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b([01]?\d|2[0-3])(?::([0-5]\d))?\s*([ap])\.?m\b\.?|\b([01]?\d|2[0-3]):([0-5]\d)\b").unwrap()
});

/// A timestamp with its offset in a call's arguments: `2025-03-11T14:00:00Z`,
/// `2025-03-11T09:00:00-05:00`.
static STAMP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})").unwrap());

/// Minutes after midnight of each clock time the text asks for ([`ASKED`]).
fn asked_clocks(text: &str) -> Vec<i32> {
    ASKED
        .captures_iter(text)
        .filter_map(|c| {
            let (h, m, half) = match c.get(1) {
                Some(h) => (h, c.get(2), c.get(3)),
                None => (c.get(4)?, c.get(5), None),
            };
            let h: i32 = h.as_str().parse().ok()?;
            let m: i32 = m.map_or(Some(0), |m| m.as_str().parse().ok())?;
            // "13pm" is no time.
            if half.is_some() && h > 12 {
                return None;
            }
            Some(super::units::hour_of_day(h, half.map(|x| x.as_str())) * 60 + m)
        })
        .collect()
}

/// The zone's other offset in the year of `ts`: the offset in force half a year away (January
/// against July) when it differs from the one in force at `ts`. `None` for a zone without
/// daylight saving that year.
fn other_offset(tz: &TimeZone, ts: Timestamp, now: Offset) -> Option<Offset> {
    let year = now.to_datetime(ts).year();
    [format!("{year}-01-15T12:00:00Z"), format!("{year}-07-15T12:00:00Z")]
        .iter()
        .filter_map(|s| s.parse::<Timestamp>().ok())
        .map(|t| tz.to_offset(t))
        .find(|o| *o != now)
}

/// Minutes after midnight of `ts` at offset `o`.
fn clock_at(ts: Timestamp, o: Offset) -> i32 {
    let local = o.to_datetime(ts);
    i32::from(local.hour()) * 60 + i32::from(local.minute())
}

/// `-04:00` for an offset of four hours west of UTC.
fn written(o: Offset) -> String {
    let s = o.seconds();
    let sign = if s < 0 { '−' } else { '+' };
    format!("UTC{sign}{:02}:{:02}", s.abs() / 3600, s.abs() % 3600 / 60)
}

/// Step `i`, a tool call, writes a timestamp with its offset ([`STAMP`], the first one: the
/// start) that, in a zone the run names ([`IANA`], in a user's turn or a tool result of the last
/// [`WINDOW`] steps), is a clock time the user asked for ([`ASKED`], in a user's turn before it)
/// only at the zone's other offset of the year, not at the offset in force on that date: the
/// conversion used standard time in summer or daylight time in winter. A booked time that is the
/// asked one at the offset in force, or that no asked time explains, is not read here.
pub(super) fn other_season_offset(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind != StepKind::ToolCall || super::actions::is_human(step) {
        return;
    }
    let Some(stamp) = STAMP.find(&step.content) else { return };
    let Ok(ts) = stamp.as_str().parse::<Timestamp>() else { return };
    let from = i.saturating_sub(WINDOW);
    let asked: Vec<i32> = (from..i)
        .filter(|&j| super::actions::is_human(&t.steps[j]) && t.steps[j].kind == StepKind::Message)
        .flat_map(|j| asked_clocks(&t.steps[j].content))
        .collect();
    if asked.is_empty() {
        return;
    }
    let mut zones: Vec<&str> = (from..i)
        .filter(|&j| super::actions::is_human(&t.steps[j]) || t.steps[j].kind == StepKind::ToolResult)
        .flat_map(|j| IANA.find_iter(&t.steps[j].content).map(|m| m.as_str()))
        .collect();
    zones.dedup();
    for zone in zones {
        let Ok(tz) = TimeZone::get(zone) else { continue };
        let now = tz.to_offset(ts);
        let Some(other) = other_offset(&tz, ts, now) else { continue };
        let (booked, meant) = (clock_at(ts, now), clock_at(ts, other));
        if asked.contains(&booked) || !asked.contains(&meant) {
            continue;
        }
        let info = tz.to_offset_info(ts);
        let local = now.to_datetime(ts);
        // The asked time at the offset in force, in UTC.
        let right = (meant - now.seconds() / 60).rem_euclid(24 * 60);
        out.push(finding(
            Signal::ArgumentMismatch,
            weights::ARGUMENT_MISMATCH,
            format!(
                "books {}, which is {:02}:{:02} in {zone} on {} ({}, {}); the {:02}:{:02} asked for is \
                 {:02}:{:02} UTC: the offset used, {}, is not the one in force that day",
                stamp.as_str(),
                local.hour(),
                local.minute(),
                local.date(),
                info.abbreviation(),
                written(now),
                meant / 60,
                meant % 60,
                right / 60,
                right % 60,
                written(other),
            ),
        ));
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asked_clock_times_are_read_in_both_notations() {
        assert_eq!(asked_clocks("next Tuesday at 9am my time"), vec![9 * 60]);
        assert_eq!(asked_clocks("at 2:30 pm, or 16:00"), vec![14 * 60 + 30, 16 * 60]);
        assert_eq!(asked_clocks("12am and 12pm"), vec![0, 12 * 60]);
    }

    #[test]
    fn the_other_offset_is_the_one_of_the_other_season() {
        let tz = TimeZone::get("America/New_York").unwrap();
        let ts: Timestamp = "2025-03-11T14:00:00Z".parse().unwrap();
        let now = tz.to_offset(ts);
        assert_eq!(written(now), "UTC−04:00");
        assert_eq!(other_offset(&tz, ts, now).map(written).as_deref(), Some("UTC−05:00"));
        assert_eq!(clock_at(ts, now), 10 * 60);
        // No daylight saving: no other offset.
        let tokyo = TimeZone::get("Asia/Tokyo").unwrap();
        assert_eq!(other_offset(&tokyo, ts, tokyo.to_offset(ts)), None);
    }
}
