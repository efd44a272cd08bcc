//! Times booked at the wrong offset or on the wrong day of a time zone. With daylight saving:
//! the user asks for "9am my time", the run knows the user's zone (`"timezone":
//! "America/New_York"`), and the call books `2025-03-11T14:00:00Z`, which is 9:00 at the zone's
//! standard offset (UTC−05:00) but 10:00 on that date, when daylight time (UTC−04:00) is in
//! force. Across the date line: "Tuesday at 9:00 am their time" for the Tokyo office, booked
//! `2025-06-10T20:00:00-04:00`, which is 9:00 on Wednesday in Tokyo. Zones are named by IANA
//! name, by the city of one (`Tokyo`, `New York`) or by an abbreviation that means one offset
//! (`JST`, `CEST`); offsets come from the IANA time zone database (bundled with `jiff`).
//! docs/METHODS.md, "Actions".

use std::collections::HashMap;
use std::sync::LazyLock;

use jiff::civil::Weekday;
use jiff::tz::{Offset, TimeZone};
use jiff::{SignedDuration, Timestamp};
use regex::Regex;

use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Part, Prose, Signal};
use crate::model::StepKind;
use crate::prose;

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

/// The regions of the IANA names whose last part is a city people name a zone by.
const REGIONS: [&str; 8] = ["Africa", "America", "Asia", "Atlantic", "Australia", "Europe", "Indian", "Pacific"];

/// Last parts of IANA names that are also ordinary words or common names ("Center", "Easter",
/// "Victoria"): not read as a zone's city.
const NOT_CITIES: [&str; 20] = [
    "Center",
    "Christmas",
    "Currie",
    "Dawson",
    "Easter",
    "Jersey",
    "Knox",
    "Mendoza",
    "Midway",
    "North",
    "Oral",
    "Regina",
    "Resolute",
    "South",
    "Stanley",
    "Victoria",
    "Virgin",
    "Wake",
    "West",
    "Monticello",
];

/// The IANA zone of each city its name ends in (`Tokyo` → `Asia/Tokyo`, `New York` →
/// `America/New_York`), from the bundled database.
static CITIES: LazyLock<HashMap<String, String>> = LazyLock::new(|| {
    let mut out = HashMap::new();
    for name in jiff::tz::db().available() {
        let name = name.as_str();
        let mut parts = name.split('/');
        if !parts.next().is_some_and(|r| REGIONS.contains(&r)) {
            continue;
        }
        let city = name.rsplit('/').next().unwrap_or(name).replace('_', " ");
        if NOT_CITIES.contains(&city.as_str()) {
            continue;
        }
        out.entry(city).or_insert_with(|| name.to_string());
    }
    out
});

/// The offset each alphabetic zone abbreviation means (`JST` → UTC+09:00, `EDT` → UTC−04:00),
/// read from the database's zones in January and July. An abbreviation that zones use for
/// several offsets is kept only when one offset is used by at least twice as many zones as any
/// other (`PST`: Pacific, not the Philippines); `IST` (India, Ireland, Israel) is not kept.
static ABBREVIATIONS: LazyLock<HashMap<String, Offset>> = LazyLock::new(|| {
    let mut uses: HashMap<String, HashMap<i32, usize>> = HashMap::new();
    let times: Vec<Timestamp> =
        ["2025-01-15T12:00:00Z", "2025-07-15T12:00:00Z"].iter().filter_map(|t| t.parse().ok()).collect();
    for name in jiff::tz::db().available() {
        let Ok(tz) = TimeZone::get(name.as_str()) else { continue };
        for &t in &times {
            let info = tz.to_offset_info(t);
            let abbreviation = info.abbreviation();
            if abbreviation.len() >= 3 && abbreviation.chars().all(|c| c.is_ascii_uppercase()) {
                *uses.entry(abbreviation.to_string()).or_default().entry(info.offset().seconds()).or_default() += 1;
            }
        }
    }
    uses.into_iter()
        .filter_map(|(abbreviation, by)| {
            let mut counts: Vec<(usize, i32)> = by.into_iter().map(|(o, n)| (n, o)).collect();
            counts.sort_unstable_by(|a, b| b.cmp(a));
            let (n, seconds) = counts[0];
            let clear = counts.get(1).is_none_or(|&(m, _)| n >= 2 * m);
            clear.then(|| Offset::from_seconds(seconds).ok().map(|o| (abbreviation, o))).flatten()
        })
        .collect()
});

/// A run of capitalised words (`New York`, `Tokyo`), where a city's name is looked for.
static CAPITALISED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b[A-Z][a-z]+(?:[ _-][A-Z][a-z]+)*\b").unwrap());

/// An alphabetic zone abbreviation as a word: `JST`, `CEST`.
static ABBREVIATION: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b[A-Z]{3,5}\b").unwrap());

/// A time zone a text names, with how it is written.
struct Named {
    /// As the finding writes it: the IANA name, or the abbreviation.
    label: String,
    zone: TimeZone,
}

/// The zones `text` names: IANA names, cities of one (every run of one to three capitalised
/// words is looked up) and abbreviations of one offset, in that order, each once.
fn named_zones(text: &str, out: &mut Vec<Named>) {
    let mut push = |label: String, zone: TimeZone| {
        if !out.iter().any(|n| n.label == label) {
            out.push(Named { label, zone });
        }
    };
    for m in IANA.find_iter(text) {
        if let Ok(tz) = TimeZone::get(m.as_str()) {
            push(m.as_str().to_string(), tz);
        }
    }
    for m in CAPITALISED.find_iter(text) {
        let words: Vec<&str> = m.as_str().split([' ', '_', '-']).collect();
        for len in (1..=words.len().min(3)).rev() {
            for start in 0..=words.len() - len {
                let Some(iana) = CITIES.get(&words[start..start + len].join(" ")) else { continue };
                if let Ok(tz) = TimeZone::get(iana) {
                    push(iana.clone(), tz);
                }
            }
        }
    }
    for m in ABBREVIATION.find_iter(text) {
        if let Some(&o) = ABBREVIATIONS.get(m.as_str()) {
            push(m.as_str().to_string(), TimeZone::fixed(o));
        }
    }
}

/// A weekday by its English name.
static WEEKDAY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(mon|tues|wednes|thurs|fri|satur|sun)day\b").unwrap());

/// The weekdays `text` names.
fn asked_weekdays(text: &str) -> Vec<Weekday> {
    WEEKDAY
        .captures_iter(text)
        .filter_map(|c| {
            let n = ["mon", "tues", "wednes", "thurs", "fri", "satur", "sun"]
                .iter()
                .position(|d| c[1].eq_ignore_ascii_case(d))?;
            Weekday::from_monday_zero_offset(i8::try_from(n).ok()?).ok()
        })
        .collect()
}

/// A weekday's English name.
fn weekday_name(w: Weekday) -> &'static str {
    ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
        [usize::try_from(w.to_monday_zero_offset()).unwrap_or(0)]
}

/// The offset a timestamp is written with: `Z` or `±hh:mm` at its end.
fn written_offset(stamp: &str) -> Option<Offset> {
    if stamp.ends_with('Z') {
        return Some(Offset::UTC);
    }
    let tail = &stamp[stamp.len().checked_sub(6)?..];
    let sign = match tail.as_bytes()[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let h: i32 = tail[1..3].parse().ok()?;
    let m: i32 = tail[4..6].parse().ok()?;
    Offset::from_seconds(sign * (h * 3600 + m * 60)).ok()
}

/// What a booking call reads: its first timestamp, and the clock times and zones the run named
/// before it.
struct Booking<'s> {
    /// The timestamp as the call writes it.
    stamp: &'s str,
    ts: Timestamp,
    /// The task and the user's messages of the last [`WINDOW`] steps.
    asked_text: String,
    /// Minutes after midnight of each clock time the user asked for.
    asked: Vec<i32>,
    /// The zones named in the task, the user's messages and the tool results of the last
    /// [`WINDOW`] steps.
    zones: Vec<Named>,
}

/// The booking step `i` makes, when it is a tool call that writes a timestamp with its offset
/// ([`STAMP`], the earliest: the start) after a user turn that asks for a clock time
/// ([`ASKED`]) and a step that names a zone.
fn booking<'a>(ctx: &Context<'a>, i: usize) -> Option<Booking<'a>> {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind != StepKind::ToolCall || super::actions::served_person(step) {
        return None;
    }
    // The earliest timestamp is the start (arguments may list `end` first).
    let (ts, stamp) = STAMP
        .find_iter(&step.content)
        .filter_map(|m| Some((m.as_str().parse::<Timestamp>().ok()?, m.as_str())))
        .min_by_key(|&(ts, _)| ts)?;
    let from = i.saturating_sub(WINDOW);
    // The user's words: the task and their messages.
    let said = |j: usize| super::actions::is_human(&t.steps[j]);
    let asked_text: String = std::iter::once(t.task.as_str())
        .chain((from..i).filter(|&j| said(j)).map(|j| t.steps[j].content.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    let asked = asked_clocks(&asked_text);
    if asked.is_empty() {
        return None;
    }
    let mut zones = Vec::new();
    named_zones(&t.task, &mut zones);
    for j in (from..i).filter(|&j| said(j) || t.steps[j].kind == StepKind::ToolResult) {
        named_zones(&t.steps[j].content, &mut zones);
    }
    (!zones.is_empty()).then_some(Booking { stamp, ts, asked_text, asked, zones })
}

/// Step `i`, a tool call, writes a timestamp ([`booking`]) that, in a zone the run names, is a
/// clock time the user asked for only at the zone's other offset of the year, not at the
/// offset in force on that date: the conversion used standard time in summer or daylight time
/// in winter. A booked time that is the asked one at the offset in force, or that no asked time
/// explains, is not read here.
pub(super) fn other_season_offset(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let Some(b) = booking(ctx, i) else { return };
    let ts = b.ts;
    for Named { label: zone, zone: tz } in &b.zones {
        let now = tz.to_offset(ts);
        let Some(other) = other_offset(tz, ts, now) else { continue };
        let (booked, meant) = (clock_at(ts, now), clock_at(ts, other));
        if b.asked.contains(&booked) || !b.asked.contains(&meant) {
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
                b.stamp,
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

/// Step `i`, a tool call, writes a timestamp ([`booking`]) that, in a zone the run names, is a
/// clock time the user asked for, on a weekday other than every one the user named: the time
/// was converted with the hours right and the date wrong (9:00 on Tuesday in Tokyo booked as
/// Tuesday 20:00 in New York, which is Wednesday in Tokyo). A booking whose weekday in that zone
/// is one asked for, or a request that names no weekday, is not read here.
pub(super) fn wrong_day(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let Some(b) = booking(ctx, i) else { return };
    let days = asked_weekdays(&b.asked_text);
    let Some(&day) = days.first() else { return };
    let Some(call_offset) = written_offset(b.stamp) else { return };
    for Named { label, zone } in &b.zones {
        let local = zone.to_offset(b.ts).to_datetime(b.ts);
        let clock = i32::from(local.hour()) * 60 + i32::from(local.minute());
        if !b.asked.contains(&clock) || days.contains(&local.weekday()) {
            continue;
        }
        // The asked weekday nearest the booked date, at the same clock time in that zone.
        let mut shift = i64::from(local.weekday().until(day));
        if shift > 3 {
            shift -= 7;
        }
        let Ok(moved) = local.checked_add(SignedDuration::from_hours(24 * shift)) else { continue };
        let Ok(right) = moved.to_zoned_datetime(zone.clone()) else { continue };
        let there = call_offset.to_datetime(right.timestamp());
        out.push(finding(
            Signal::ArgumentMismatch,
            weights::ARGUMENT_MISMATCH,
            format!(
                "books {}, which is {:02}:{:02} on {} {} in {label}; the {} {:02}:{:02} asked for there is \
                 {} {} {:02}:{:02} at {}, the offset the call writes",
                b.stamp,
                local.hour(),
                local.minute(),
                weekday_name(local.weekday()),
                local.date(),
                weekday_name(day),
                local.hour(),
                local.minute(),
                weekday_name(there.weekday()),
                there.date(),
                there.hour(),
                there.minute(),
                written(call_offset),
            ),
        ));
        return;
    }
}

/// A timestamp column compared with a bare date in a query: `created_at >= '2025-10-05'`.
/// Groups: the column, the date.
static DATE_BOUND: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b([a-z_][\w.]*)\s*(?:>=|>|<=|<|between)\s*'(\d{4}-\d{2}-\d{2})'").unwrap());

/// What converts a timestamp to a zone's local time in a query or code: SQL's `AT TIME ZONE`,
/// `timezone(`, `CONVERT_TZ(`, `SET TIME ZONE`, pandas' `tz_convert(`.
static CONVERTS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bat\s+time\s+zone\b|\btimezone\s*\(|\bconvert_tz\s*\(|\bset\s+(?:time\s+zone|timezone)\b|tz_convert\s*\(").unwrap()
});

/// Words of a sentence that says what a day or date is.
static DAY_WORDS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)\b(?:day|days|daily|date|dates)\b").unwrap());

/// Step `i`, a tool call, runs a query that bounds a column by bare dates ([`DATE_BOUND`]:
/// `created_at >= '2025-10-05'`) without converting to any zone ([`CONVERTS`]) or naming one,
/// while a tool output the agent read before (within [`WINDOW`] steps) says in a sentence about
/// days or dates ([`DAY_WORDS`]) that they are in an IANA zone other than UTC ("A day is a
/// business day in America/Los_Angeles"): the query counts the day with the session's
/// boundaries, not that zone's.
pub(super) fn day_in_other_zone(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind != StepKind::ToolCall || !step.content.contains('\'') {
        return;
    }
    let Some(bound) = DATE_BOUND.captures(&step.content) else { return };
    if CONVERTS.is_match(&step.content) || IANA.is_match(&step.content) {
        return;
    }
    let Some((told, zone, sentence)) = (i.saturating_sub(WINDOW)..i).rev().find_map(|j| {
        let s = &t.steps[j];
        if s.kind != StepKind::ToolResult || !IANA.is_match(&s.content) {
            return None;
        }
        crate::text::sentences(&s.content).find_map(|sentence| {
            let zone = IANA.find(sentence)?.as_str();
            (DAY_WORDS.is_match(sentence) && !zone.starts_with("Etc/"))
                .then(|| (j, zone.to_string(), sentence.trim().to_string()))
        })
    }) else {
        return;
    };
    let Ok(tz) = TimeZone::get(&zone) else { return };
    let Ok(ts) = format!("{}T12:00:00Z", &bound[2]).parse::<Timestamp>() else { return };
    let offset = tz.to_offset(ts);
    if offset.seconds() == 0 {
        return;
    }
    let starts = (-offset.seconds() / 60).rem_euclid(24 * 60);
    out.push(finding(
        Signal::ArgumentMismatch,
        weights::ARGUMENT_MISMATCH,
        prose![
            format!("bounds {} by the bare date {} in the session's zone, while step ", &bound[1], &bound[2],),
            Part::Step(told),
            format!(
                " says days are in {zone} (\"{}\"): there the day starts at {:02}:{:02} UTC ({})",
                crate::text::clip(&sentence, 80),
                starts / 60,
                starts % 60,
                written(offset),
            ),
        ],
    ));
}

/// A fixed UTC offset built in code: Python's `timezone(timedelta(hours=-8))`, pytz's
/// `FixedOffset(-480)` (minutes), dateutil's `tzoffset("PST", -28800)` (seconds), the
/// `Etc/GMT+8` zone (sign the other way). Groups: hours; minutes; seconds; `Etc/GMT` hours.
static FIXED_OFFSET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"timezone\(\s*(?:datetime\.)?timedelta\(\s*hours\s*=\s*([+-]?\s*\d+(?:\.\d+)?)|FixedOffset\(\s*([+-]?\d+)\s*\)|tzoffset\([^,()]*,\s*([+-]?\d+)\s*\)|Etc/GMT([+-]\d{1,2})\b"#,
    )
    .unwrap()
});

/// A clock time followed by a zone abbreviation: `11:40 PM PST`, `03:20 PDT`, `12:05:00 CEST`.
/// Group 1: the abbreviation.
static STAMP_ZONE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b\d{1,2}:\d{2}(?::\d{2})?\s*(?:[AaPp]\.?[Mm]\.?)?\s+([A-Z]{3,5})\b").unwrap());

/// The offset a [`FIXED_OFFSET`] match builds.
fn fixed_offset(c: &regex::Captures<'_>) -> Option<Offset> {
    let number = |i: usize| c.get(i).map(|m| m.as_str().replace(char::is_whitespace, ""));
    let seconds = if let Some(h) = number(1) {
        (h.parse::<f64>().ok()? * 3600.0).round() as i32
    } else if let Some(m) = number(2) {
        m.parse::<i32>().ok()? * 60
    } else if let Some(x) = number(3) {
        x.parse::<i32>().ok()?
    } else {
        -number(4)?.parse::<i32>().ok()? * 3600
    };
    Offset::from_seconds(seconds).ok()
}

/// Step `i`, a call's code, builds one fixed UTC offset ([`FIXED_OFFSET`]) while an earlier
/// tool output of the last [`WINDOW`] steps gives its times under zone abbreviations of two
/// offsets ([`STAMP_ZONE`], [`ABBREVIATIONS`]: `PST` and `PDT`), one of them the fixed one: a
/// daylight-saving change falls between the times, and the code reads the times of the other
/// offset an hour off. Code that names a zone by its IANA name is not read.
pub(super) fn fixed_offset_across_change(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind != StepKind::ToolCall || IANA.is_match(&step.content) {
        return;
    }
    let Some(fixed) = FIXED_OFFSET.captures_iter(&step.content).find_map(|c| fixed_offset(&c)) else { return };
    for j in (i.saturating_sub(WINDOW)..i).rev() {
        let s = &t.steps[j];
        if s.kind != StepKind::ToolResult {
            continue;
        }
        let mut zones: Vec<(&str, Offset)> = Vec::new();
        for c in STAMP_ZONE.captures_iter(&s.content) {
            let name = c.get(1).map_or("", |m| m.as_str());
            let Some(&o) = ABBREVIATIONS.get(name) else { continue };
            if !zones.iter().any(|(_, z)| *z == o) {
                zones.push((name, o));
            }
        }
        let Some(&(same, _)) = zones.iter().find(|(_, o)| *o == fixed) else { continue };
        let Some(&(other, other_offset)) = zones.iter().find(|(_, o)| *o != fixed) else { continue };
        // Two zones of one place differ by the hour of daylight saving, no more.
        if (other_offset.seconds() - fixed.seconds()).abs() > 3600 {
            continue;
        }
        out.push(finding(
            Signal::ArgumentMismatch,
            weights::ARGUMENT_MISMATCH,
            prose![
                format!("reads every time at the fixed offset {}, but step ", written(fixed)),
                Part::Step(j),
                format!(
                    " gives them in {same} and {other} ({}): the times in {other} come out an hour off",
                    written(other_offset)
                ),
            ],
        ));
        return;
    }
}

/// How many steps back the instruction a call works from is looked for.
const INSTRUCTION_WINDOW: usize = 20;

/// A sentence of an instruction that gives its clock times in UTC: one with `UTC`, `GMT` or a
/// `Z` right after a clock time.
static SAYS_UTC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(?:UTC|GMT)\b|\b(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?Z\b").unwrap());

/// Minutes after midnight of each clock time that an instruction gives in UTC: the `HH:MM`
/// times of its sentences that say UTC ([`SAYS_UTC`]; "between 14:00 and 14:30 UTC on
/// 2025-06-12" gives 14:00 and 14:30), as written (no am/pm).
fn utc_clocks(text: &str) -> Vec<i32> {
    static CLOCK: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b([01]?\d|2[0-3]):([0-5]\d)\b").unwrap());
    let mut out = Vec::new();
    for sentence in text.split_inclusive(['.', '\n', ';']) {
        if !SAYS_UTC.is_match(sentence) {
            continue;
        }
        for c in CLOCK.captures_iter(sentence) {
            if let (Ok(h), Ok(m)) = (c[1].parse::<i32>(), c[2].parse::<i32>()) {
                out.push(h * 60 + m);
            }
        }
    }
    out
}

/// Step `i`, an agent's tool call, writes a timestamp with an offset other than UTC
/// (`2025-06-12T14:00:00+02:00`) whose clock time is one that the instruction it works from gives
/// in UTC ("between 14:00 and 14:30 UTC"): the last delegation to its agent, or the served
/// person's last turn, within [`INSTRUCTION_WINDOW`] steps before it (the task too when neither
/// is there). The UTC clock time was written with a local offset, which moves the instant by that
/// offset: 14:00+02:00 is 12:00 UTC. An instruction that also names the offset or a zone
/// ("14:00 UTC (16:00 CEST)") is left alone, and so is an instruction that gives no UTC time.
/// docs/METHODS.md, "Actions".
pub(super) fn utc_time_given_an_offset(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind != StepKind::ToolCall || super::actions::served_person(step) || super::is_outside_agent(&step.agent) {
        return;
    }
    // Earliest first: the start of a window (arguments may list `end` first).
    let mut stamps: Vec<(&str, Offset, Timestamp)> = STAMP
        .find_iter(&step.content)
        .filter_map(|m| Some((m.as_str(), written_offset(m.as_str())?, m.as_str().parse::<Timestamp>().ok()?)))
        .filter(|(_, o, _)| *o != Offset::UTC)
        .collect();
    stamps.sort_by_key(|&(_, _, ts)| ts);
    if stamps.is_empty() {
        return;
    }
    // The instruction: the last delegation to this agent or the user's last turn.
    let from = i.saturating_sub(INSTRUCTION_WINDOW);
    let instruction = (from..i).rev().find(|&j| {
        let s = &t.steps[j];
        super::actions::is_human(s)
            || s.kind == StepKind::Delegation && s.delegate_to.as_deref() == Some(step.agent.as_str())
    });
    let text = instruction.map_or(t.task.as_str(), |j| t.steps[j].content.as_str());
    let clocks = utc_clocks(text);
    if clocks.is_empty() {
        return;
    }
    // The instruction gives the local clock too: whichever the call writes may be meant.
    let mut zones = Vec::new();
    named_zones(text, &mut zones);
    // UTC itself (the abbreviation `UTC`, `GMT`) is the instruction's zone, not another one.
    zones.retain(|z| z.label != "UTC" && z.label != "GMT");
    static OFFSET_WRITTEN: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\b(?:UTC|GMT)\s?[+−-]\s?\d|[+−-]\d{2}:\d{2}\b").unwrap());
    if !zones.is_empty() || OFFSET_WRITTEN.is_match(text) {
        return;
    }
    for (stamp, offset, ts) in stamps {
        let clock = clock_at(ts, offset);
        if !clocks.contains(&clock) {
            continue;
        }
        let utc = clock_at(ts, Offset::UTC);
        let tool = step.tool_name.as_deref().unwrap_or("the tool");
        let asked = match instruction {
            Some(j) => prose!["step ", Part::Step(j), format!(" gives {:02}:{:02} in UTC", clock / 60, clock % 60)],
            None => Prose::from(format!("the task gives {:02}:{:02} in UTC", clock / 60, clock % 60)),
        };
        out.push(finding(
            Signal::ArgumentMismatch,
            weights::ARGUMENT_MISMATCH,
            prose![format!("calls {tool} with {stamp}, but ")].with(asked).with(format!(
                ": written at {}, it is {:02}:{:02} UTC",
                written(offset),
                utc / 60,
                utc % 60
            )),
        ));
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_offset_is_read_in_python_and_its_libraries() {
        let offset = |code: &str| FIXED_OFFSET.captures(code).and_then(|c| fixed_offset(&c)).map(written);
        assert_eq!(offset("timezone(timedelta(hours=-8), \"Pacific\")").as_deref(), Some("UTC−08:00"));
        assert_eq!(offset("pytz.FixedOffset(330)").as_deref(), Some("UTC+05:30"));
        assert_eq!(offset("tz.tzoffset(\"PST\", -28800)").as_deref(), Some("UTC−08:00"));
        assert_eq!(offset("ZoneInfo(\"Etc/GMT+8\")").as_deref(), Some("UTC−08:00"));
        assert_eq!(offset("timedelta(hours=3)"), None);
    }

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

    #[test]
    fn zones_are_named_by_iana_name_city_and_abbreviation() {
        let mut zones = Vec::new();
        named_zones("the Tokyo office, a call at 9 New York time, 10:00 CEST or JST; an IST slot", &mut zones);
        let labels: Vec<&str> = zones.iter().map(|n| n.label.as_str()).collect();
        assert_eq!(labels, ["Asia/Tokyo", "America/New_York", "CEST", "JST"]);
        let ts: Timestamp = "2025-06-10T00:00:00Z".parse().unwrap();
        assert_eq!(written(zones[2].zone.to_offset(ts)), "UTC+02:00");
        // PST is Pacific time (the Philippines' use is the exception); ordinary words are no city.
        assert_eq!(ABBREVIATIONS.get("PST").map(|o| o.seconds()), Some(-8 * 3600));
        let mut none = Vec::new();
        named_zones("Before Christmas, West of the river, in the Center", &mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn weekdays_and_written_offsets_are_read() {
        assert_eq!(asked_weekdays("next Tuesday or Friday"), vec![Weekday::Tuesday, Weekday::Friday]);
        assert_eq!(written_offset("2025-06-10T20:00:00-04:00").map(written).as_deref(), Some("UTC−04:00"));
        assert_eq!(written_offset("2025-06-10T20:00:00Z").map(written).as_deref(), Some("UTC+00:00"));
    }
}
