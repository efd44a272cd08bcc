//! Values read or written in the wrong unit: an amount a tool gives in the currency's minor unit
//! (cents) stated as if it were in the major unit (`"amount_remaining": 220000` in cents, then
//! "€220,000.00 outstanding": it is €2,200.00), a UTC time told as local, and a duration or size
//! the user gave written into a key of another unit with the wrong factor ("90 seconds" written
//! as `timeout_ms: 9000`). docs/METHODS.md, "Grounding" and "Actions".

use std::sync::LazyLock;

use regex::Regex;

use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// How many steps back the tool results holding the amount are read.
const WINDOW: usize = 60;

/// An amount written with its currency: `€220,000.00`, `$ 1,506,050`, `EUR 380.00`, `220.000,00 €`,
/// `1506050 USD`. Group 1 or 2 is the number.
static AMOUNT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?:[€$£]|\b(?:EUR|USD|GBP|CHF|SEK|NOK|DKK|CAD|AUD)\b)[\s\u{a0}]?(\d[\d,.\u{a0}\u{202f}]*\d|\d)",
        r"|(\d[\d,.\u{a0}\u{202f}]*\d|\d)[\s\u{a0}]?(?:€|\b(?:EUR|USD|GBP|CHF|SEK|NOK|DKK|CAD|AUD)\b)",
    ))
    .unwrap()
});

/// A JSON member of a tool result that holds a whole amount: a name that says amount, total,
/// price, balance, due, paid, remaining, subtotal or cents, and digits with no decimal point.
/// Group 1 is the name, group 2 the digits.
static MEMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#""([A-Za-z_]*(?:amount|total|price|balance|due|paid|remaining|cents)[A-Za-z_]*)"\s*:\s*(\d{3,})\b[^.\d]"#,
    )
    .unwrap()
});

/// A text saying amounts are in the minor unit: "integers in the currency's minor unit (cents)",
/// "amounts are in cents".
static MINOR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\bminor[ -]units?\b|\b(?:in|as) cents\b|\(cents\)").unwrap());

/// The value of an amount as written, in its unit: the separator followed by exactly two digits at
/// the end is the decimal point (`220,000.00`, `220.000,00`), the others group thousands.
fn amount_value(written: &str) -> Option<f64> {
    let s: String = written.chars().filter(|c| !matches!(c, '\u{a0}' | '\u{202f}' | ' ')).collect();
    let last = s.rfind([',', '.']);
    let (whole, cents) = match last {
        Some(k) if s.len() - k - 1 == 2 => (&s[..k], &s[k + 1..]),
        _ => (s.as_str(), "0"),
    };
    let whole: String = whole.chars().filter(char::is_ascii_digit).collect();
    Some(whole.parse::<f64>().ok()? + cents.parse::<f64>().ok()? / 100.0)
}

/// `2200.0` as `2,200.00`.
fn money(v: f64) -> String {
    let cents = (v * 100.0).round() as u64;
    let whole = (cents / 100).to_string();
    let mut grouped = String::new();
    for (k, c) in whole.chars().enumerate() {
        if k > 0 && (whole.len() - k).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{grouped}.{:02}", cents % 100)
}

/// Step `i`, an agent's message, thought or call (not a shell command; a call's string arguments,
/// such as a draft's body, are read: [`call_text`]), states an
/// amount with its currency ([`AMOUNT`]) whose value in the major unit is exactly the whole number
/// a tool result of the last [`WINDOW`] steps gives for an amount ([`MEMBER`]), where the run says
/// amounts are in the minor unit: the member's name says cents (`amount_cents`), or a system or
/// tool text says so ([`MINOR`], in the first five steps or the window). The amount was read a
/// hundred times too large. Amounts under 100 are not read. docs/METHODS.md, "Grounding".
pub(super) fn minor_units_as_major(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if !matches!(step.kind, StepKind::Message | StepKind::Thought | StepKind::ToolCall)
        || super::actions::is_human(step)
        || super::is_outside_agent(&step.agent)
        || !(AMOUNT.is_match(&step.content) || step.content.contains("\\u20ac") || step.content.contains("\\u00a3"))
    {
        return;
    }
    if step.kind == StepKind::ToolCall {
        let tool = step.tool_name.as_deref().unwrap_or("").to_ascii_lowercase();
        if super::shell_command(&tool, &step.content).is_some() {
            return;
        }
    }
    // A call's arguments are read as the texts they hold (a draft's body), JSON escapes undone.
    let text = match step.kind {
        StepKind::ToolCall => super::call_strings(&step.content).unwrap_or_else(|| step.content.clone()),
        _ => step.content.clone(),
    };
    let from = i.saturating_sub(WINDOW);
    let said_minor = (0..i.min(5)).chain(from..i).any(|j| MINOR.is_match(&t.steps[j].content));
    for c in AMOUNT.captures_iter(&text) {
        let Some(g) = c.get(1).or_else(|| c.get(2)) else { continue };
        let Some(v) = amount_value(g.as_str()) else { continue };
        if v < 100.0 || v.fract() != 0.0 {
            continue;
        }
        for j in (from..i).rev().filter(|&j| t.steps[j].kind == StepKind::ToolResult) {
            let Some(m) = MEMBER
                .captures_iter(&t.steps[j].content)
                .find(|m| m[2].parse::<f64>().is_ok_and(|n| n == v) && (said_minor || m[1].contains("cents")))
            else {
                continue;
            };
            let shown = c.get(0).map_or("", |a| a.as_str()).trim();
            out.push(finding(
                Signal::IgnoredResult,
                weights::MISREAD,
                prose![
                    format!("states {shown}, but {} {} at step ", &m[1], &m[2]),
                    Part::Step(j),
                    format!(" is in the minor unit (cents): {}", money(v / 100.0))
                ],
            ));
            return;
        }
    }
}

/// The hour of the day (0 to 23) of hour `h` written with `half`, the `a` or `p` of "am" / "pm"
/// (any case): "12 am" is 0, "3 pm" 15; without one, or past 12, `h` as written.
pub(super) fn hour_of_day(h: i32, half: Option<&str>) -> i32 {
    match half.map(str::to_ascii_lowercase).as_deref() {
        Some("p") if h < 12 => h + 12,
        Some("a") if h == 12 => 0,
        _ => h,
    }
}

/// A clock time an agent states (`9:50 PM`, `21:50`), with its minutes after midnight and its
/// byte span.
static STATED_CLOCK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b([01]?\d|2[0-3]):([0-5]\d)(?:\s*([ap])\.?m\.?\b)?").unwrap());

/// A word saying a time is local, after the time on the same line: "local", a zone's name
/// ("Mountain Time", "Pacific") or abbreviation (`MST`, `PDT`, `CET`).
static LOCAL_ZONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(?:local|(?i:mountain|pacific|eastern|central|atlantic|alaska|hawaii)(?:\s+time)?|[MPECA][SD]?T|CES?T|EES?T|WES?T|BST|IST|JST|AES?T)\b",
    )
    .unwrap()
});

/// A UTC timestamp a tool writes (`2025-11-19T21:50:00Z`): hour and minute.
static UTC_STAMP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\d{4}-\d{2}-\d{2}T(\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?Z").unwrap());

/// A local offset the run states: `"utc_offset": "-07:00"` (any member whose name holds
/// `offset`), or `UTC-7` / `UTC+05:30` in prose.
static OFFSET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)offset[a-z_]*"?\s*[:=]\s*"?([+-])(\d{1,2}):?(\d{2})?|\bUTC\s?([+-])(\d{1,2})(?::?(\d{2}))?\b"#)
        .unwrap()
});

/// How many steps back [`utc_as_local`] reads timestamps and offsets.
const ZONE_WINDOW: usize = 40;

/// Step `i`, an agent's message, states a clock time as local (a [`LOCAL_ZONE`] word after it on
/// the same line: "9:50 PM Mountain Time") that is the clock time of a UTC timestamp a tool
/// result of the last [`ZONE_WINDOW`] steps gives (`"estimated": "2025-11-19T21:50:00Z"`), while
/// the run states a local offset other than zero (`"utc_offset_on_date": "-07:00"`, in a tool
/// result of the window or the first five steps) and the time at that offset is another: the UTC
/// time was told as local. docs/METHODS.md, "Grounding".
pub(super) fn utc_as_local(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind != StepKind::Message
        || super::actions::is_human(step)
        || super::is_outside_agent(&step.agent)
        || !step.content.contains(':')
        || !LOCAL_ZONE.is_match(&step.content)
    {
        return;
    }
    let from = i.saturating_sub(ZONE_WINDOW);
    let offsets: Vec<i32> = (0..i.min(5))
        .chain(from..i)
        .flat_map(|j| OFFSET.captures_iter(&t.steps[j].content).collect::<Vec<_>>())
        .filter_map(|c| {
            let (sign, h, m) = match c.get(1) {
                Some(sign) => (sign.as_str(), c.get(2)?, c.get(3)),
                None => (c.get(4)?.as_str(), c.get(5)?, c.get(6)),
            };
            let minutes = h.as_str().parse::<i32>().ok()? * 60 + m.map_or(Some(0), |m| m.as_str().parse().ok())?;
            Some(if sign == "-" { -minutes } else { minutes })
        })
        .filter(|&o| o != 0)
        .collect();
    let Some(&offset) = offsets.last() else { return };
    let stamps: Vec<(usize, i32, String)> = (from..i)
        .rev()
        .filter(|&j| t.steps[j].kind == StepKind::ToolResult)
        .flat_map(|j| {
            UTC_STAMP
                .captures_iter(&t.steps[j].content)
                .filter_map(|c| Some((j, c[1].parse::<i32>().ok()? * 60 + c[2].parse::<i32>().ok()?, c[0].to_string())))
                .collect::<Vec<_>>()
        })
        .collect();
    for line in step.content.lines() {
        for c in STATED_CLOCK.captures_iter(line) {
            let whole = c.get(0).expect("match");
            if !LOCAL_ZONE.is_match(&line[whole.end()..]) {
                continue;
            }
            let (Ok(h), Ok(m)) = (c[1].parse::<i32>(), c[2].parse::<i32>()) else { continue };
            let stated = hour_of_day(h, c.get(3).map(|x| x.as_str())) * 60 + m;
            let Some((j, _, stamp)) = stamps.iter().find(|(_, utc, _)| *utc == stated) else { continue };
            let local = (stated + offset).rem_euclid(24 * 60);
            let sign = if offset < 0 { '-' } else { '+' };
            out.push(finding(
                Signal::IgnoredResult,
                weights::MISREAD,
                prose![
                    format!("states {} as local time, but {stamp} at step ", whole.as_str().trim()),
                    Part::Step(*j),
                    format!(
                        " is UTC: at the local offset {sign}{:02}:{:02} it is {:02}:{:02}",
                        offset.abs() / 60,
                        offset.abs() % 60,
                        local / 60,
                        local % 60
                    )
                ],
            ));
            return;
        }
    }
}

/// A time zone named in the user's words: an IANA name (`Europe/Berlin`, `America/New_York`), a
/// [`LOCAL_ZONE`] word, or "our time". Not UTC or GMT.
static NAMED_ZONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:Africa|America|Asia|Atlantic|Australia|Europe|Indian|Pacific)/[A-Z][A-Za-z_]+|(?i:\bour time\b)")
        .unwrap()
});

/// A UTC time a tool writes: a timestamp ending in `Z`, or a clock time followed by `UTC`.
/// Groups 1–2 or 3–4 are the hour and the minute.
static UTC_TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\d{4}-\d{2}-\d{2}[T ](\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?Z|\b(\d{1,2}):(\d{2})(?::\d{2})?\s?UTC\b")
        .unwrap()
});

/// Zones whose standard time is UTC itself: a time given there in winter is a UTC time, and
/// without the zone's calendar the season is not known, so they are not read.
const UTC_IN_WINTER: [&str; 8] = [
    "Europe/London",
    "Europe/Dublin",
    "Europe/Lisbon",
    "Atlantic/Reykjavik",
    "Atlantic/Canary",
    "Atlantic/Faroe",
    "Africa/Abidjan",
    "Africa/Accra",
];

/// How a zone is named in a finding: "Europe/Berlin time", "their own time".
fn zone_phrase(zone: &str) -> String {
    if zone.eq_ignore_ascii_case("our time") { "their own time".to_string() } else { format!("{zone} time") }
}

/// How far apart (in minutes) a local time and a UTC time an agent compares may be.
const COMPARED_WITHIN: i32 = 180;

/// Step `i`, an agent's message or thought, compares a clock time the user gave in a named zone
/// other than UTC ([`NAMED_ZONE`] or a [`LOCAL_ZONE`] word on the same line of a user's turn:
/// "at 14:05 (the board is set to Europe/Berlin)") with a UTC time a tool result of the last
/// [`ZONE_WINDOW`] steps gives ([`UTC_TIME`]), both written in the step and within
/// [`COMPARED_WITHIN`] minutes of each other, and names neither the zone nor UTC beside the
/// user's time: the two clocks were read as one. The first such step is where the comparison is
/// made. docs/METHODS.md, "Grounding".
pub(super) fn local_as_utc(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if !matches!(step.kind, StepKind::Message | StepKind::Thought)
        || super::actions::is_human(step)
        || super::is_outside_agent(&step.agent)
        || !step.content.contains(':')
    {
        return;
    }
    // Minutes after midnight, a 12-hour time read with its `am` / `pm`.
    let clock = |c: &regex::Captures<'_>| -> Option<i32> {
        let h = hour_of_day(c[1].parse::<i32>().ok()?, c.get(3).map(|x| x.as_str()));
        Some(h * 60 + c[2].parse::<i32>().ok()?)
    };
    // The user's times given in a named zone: (step, minutes, as written, the zone).
    let mut local: Vec<(usize, i32, String, String)> = Vec::new();
    for j in (0..i).filter(|&j| super::actions::is_human(&t.steps[j])) {
        for line in t.steps[j].content.lines() {
            let Some(zone) = NAMED_ZONE.find(line).or_else(|| LOCAL_ZONE.find(line)) else { continue };
            if line.contains("UTC") || line.contains("GMT") || UTC_IN_WINTER.contains(&zone.as_str()) {
                continue;
            }
            for c in STATED_CLOCK.captures_iter(line) {
                if let Some(m) = clock(&c) {
                    local.push((j, m, c[0].to_string(), zone.as_str().to_string()));
                }
            }
        }
    }
    if local.is_empty() {
        return;
    }
    let from = i.saturating_sub(ZONE_WINDOW);
    let utc: Vec<(usize, i32)> = (from..i)
        .filter(|&j| t.steps[j].kind == StepKind::ToolResult)
        .flat_map(|j| {
            UTC_TIME
                .captures_iter(&t.steps[j].content)
                .filter_map(|c| {
                    let (h, m) = (c.get(1).or(c.get(3))?, c.get(2).or(c.get(4))?);
                    Some((j, h.as_str().parse::<i32>().ok()? * 60 + m.as_str().parse::<i32>().ok()?))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let stated: Vec<(i32, &str)> =
        STATED_CLOCK.captures_iter(&step.content).filter_map(|c| Some((clock(&c)?, c.get(0)?.as_str()))).collect();
    for (j, at, written, zone) in &local {
        let Some(pos) = step.content.find(written.as_str()) else { continue };
        // The step says which clock the user's time is on: its sentence names the zone (its
        // city, a zone word, an offset), or writes a UTC time that no tool gave, a conversion
        // ("the 14:05 jump was at 12:05 UTC").
        let sentence = &step.content[crate::text::sentence_around(&step.content, pos, pos + written.len())];
        let city = zone.rsplit('/').next().unwrap_or(zone).replace('_', " ");
        let converted = UTC_TIME.captures_iter(sentence).any(|c| {
            let (Some(h), Some(m)) = (c.get(1).or(c.get(3)), c.get(2).or(c.get(4))) else { return false };
            let at = h.as_str().parse::<i32>().unwrap_or(-1) * 60 + m.as_str().parse::<i32>().unwrap_or(0);
            !utc.iter().any(|(_, u)| *u == at)
        });
        if converted
            || sentence.contains(&city)
            || LOCAL_ZONE.is_match(sentence)
            || NAMED_ZONE.is_match(sentence)
            || OFFSET.is_match(sentence)
        {
            continue;
        }
        // An earlier step of the agents that lines up the same two times made the comparison.
        let made_before = |w: &str| {
            (j + 1..i).any(|k| {
                let s = &t.steps[k];
                matches!(s.kind, StepKind::Message | StepKind::Thought)
                    && !super::actions::is_human(s)
                    && s.content.contains(written.as_str())
                    && s.content.contains(w)
            })
        };
        let compared = stated
            .iter()
            .filter(|(m, w)| *w != written.as_str() && (m - at).abs() <= COMPARED_WITHIN && !made_before(w));
        for (m, w) in compared {
            let Some((k, _)) = utc.iter().find(|(_, u)| u == m) else { continue };
            out.push(finding(
                Signal::IgnoredResult,
                weights::MISREAD,
                prose![
                    format!("compares {written}, which the user gave at step "),
                    Part::Step(*j),
                    format!(" in {}, with {w}, a UTC time of step ", zone_phrase(zone)),
                    Part::Step(*k),
                    ", as if both were one clock"
                ],
            ));
            return;
        }
    }
}

/// A quantity with its unit as a person writes it: "90 seconds", "5 s", "250ms", "2 minutes",
/// "1.5 h", "50 MB", "512 KiB". Group 1 is the number, group 2 the unit.
static QUANTITY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\b(\d+(?:\.\d+)?)\s?(",
        r"nanoseconds?|ns|microseconds?|us|µs|milliseconds?|millis|msecs?|ms|seconds?|secs?|s",
        r"|minutes?|mins?|hours?|hrs?|h|days?",
        r"|bytes|kilobytes?|kib|kb|megabytes?|mib|mb|gigabytes?|gib|gb",
        r")\b",
    ))
    .unwrap()
});

/// A key given a number as code, configuration and calls write it: `timeout_ms: 9000`,
/// `"timeout_ms": 9000`, `timeout_ms=9000`, `TIMEOUT_MS=9000`, `max_size_mb = 50`, `300_000`, a
/// typed field `timeout_ms: int = 9000`. Group 1 is the key, group 2 the number; group 3 is set
/// when an operator follows (`90 * 1000`: the number is a factor, not the value).
static KEYED_NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"\b([A-Za-z][A-Za-z0-9_\-]*)["']?\s*(?::\s*[A-Za-z_][\w\[\]., |]*?\s*=|[:=])\s*["']?(\d[\d_]*(?:\.\d+)?)\b(\s*[*/+\-]\s*[\d(])?"#,
    )
    .unwrap()
});

/// A unit: its dimension ("time", "size") and its size in the dimension's base unit (seconds,
/// bytes); `binary` is a size unit's binary size (`MiB`, and `MB` as many programs mean it), else
/// the same as `scale`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Unit {
    dimension: &'static str,
    scale: f64,
    binary: f64,
}

/// A quantity the person served gave: the step, as written, its number and its unit, and the
/// clause it is in (lower case: up to a sentence's end, a semicolon or " and ").
struct Given {
    step: usize,
    written: String,
    value: f64,
    unit: Unit,
    sentence: String,
}

/// Words that name the same setting in a key and in a person's sentence (a key's words, split
/// as [`super::actions::name_words`] splits them, beside the words people write for them).
const SETTING_WORDS: [&[&str]; 8] = [
    &["timeout", "time", "wait", "waits", "deadline"],
    &["ttl", "expire", "expires", "expiry", "cache", "cached", "lifetime"],
    &["max", "maximum", "limit", "cap", "capped"],
    &["min", "minimum", "least"],
    &["interval", "poll", "polling"],
    &["delay", "backoff", "sleep", "pause"],
    &["size", "body", "upload", "uploads", "payload"],
    &["hold", "held", "reserve"],
];

/// Whether a person's sentence is about what key `key` sets: a word of the key other than its
/// unit (three letters or more: `timeout`, `hold`) is a word of the sentence, or the sentence has
/// a word of the [`SETTING_WORDS`] group of a word of the key ("limit uploads to 50 MB" for
/// `max_body_bytes`). "the job runs for 10 minutes" is not about `lock_renew_interval_seconds`.
fn about_key(key: &str, sentence: &str) -> bool {
    let said: Vec<&str> = sentence.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let mut words = super::actions::name_words(key);
    words.pop();
    words.iter().any(|w| {
        w.len() >= 3 && said.iter().any(|x| x == w || x.strip_suffix('s') == Some(w.as_str()))
            || SETTING_WORDS.iter().any(|g| g.contains(&w.as_str()) && said.iter().any(|x| g.contains(x)))
    })
}

/// The [`Unit`] a word names, `None` for a word that is no unit.
fn unit_scale(unit: &str) -> Option<Unit> {
    let u = unit.to_lowercase();
    let of = |dimension, scale, binary| Some(Unit { dimension, scale, binary });
    let time = |f: f64| of("time", f, f);
    match u.as_str() {
        "ns" | "nanos" | "nanosecond" | "nanoseconds" => time(1e-9),
        "us" | "µs" | "micros" | "microsecond" | "microseconds" => time(1e-6),
        "ms" | "msec" | "msecs" | "millis" | "millisecond" | "milliseconds" => time(1e-3),
        "s" | "sec" | "secs" | "second" | "seconds" => time(1.0),
        "min" | "mins" | "minute" | "minutes" => time(60.0),
        "h" | "hr" | "hrs" | "hour" | "hours" => time(3600.0),
        "day" | "days" => time(86400.0),
        "bytes" => of("size", 1.0, 1.0),
        "kb" | "kilobyte" | "kilobytes" => of("size", 1e3, 1024.0),
        "kib" => of("size", 1024.0, 1024.0),
        "mb" | "megabyte" | "megabytes" => of("size", 1e6, 1048576.0),
        "mib" => of("size", 1048576.0, 1048576.0),
        "gb" | "gigabyte" | "gigabytes" => of("size", 1e9, 1073741824.0),
        "gib" => of("size", 1073741824.0, 1073741824.0),
        _ => None,
    }
}

/// The unit a key names by its last word (`timeout_ms`, `retryDelaySeconds`, `MAX_BODY_MB`,
/// `cache-ttl-minutes`; words as [`super::actions::name_words`] splits them). `None` when the
/// last word is no unit (`timeout`, `retries`), and for a key that is one short word (`h: 90`):
/// a single letter names a unit only after a separator (`ttl_s`, `timeout_h`).
fn key_unit(key: &str) -> Option<Unit> {
    let words = super::actions::name_words(key);
    let last = words.last()?;
    if words.len() == 1 && last.len() < 3 {
        return None;
    }
    unit_scale(last)
}

/// What step `i` writes: the lines an edit adds that it does not also remove (the context an
/// edit repeats is not written; `coding::edit_lines`), else the strings of an edit's arguments
/// (a whole file written), else a state-changing call's arguments as written. Shell commands
/// that are no edit write nothing here.
fn written_text(ctx: &Context<'_>, i: usize) -> Option<String> {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if s.kind != StepKind::ToolCall {
        return None;
    }
    let editing = super::edits(t, i);
    if editing {
        if let Some((removed, added)) = super::coding::edit_lines(t, i) {
            let kept: Vec<&str> = added.iter().filter(|l| !removed.contains(l)).map(String::as_str).collect();
            return (!kept.is_empty()).then(|| kept.join("\n"));
        }
        return Some(super::call_strings(&s.content).unwrap_or_else(|| s.content.clone()));
    }
    if super::call_command(t, i).is_some() || !super::changes_state(t, i) {
        return None;
    }
    Some(s.content.clone())
}

/// Step `i`, an edit or a state-changing call, writes a number under a key that names a unit
/// ([`key_unit`]: `timeout_ms`, `ttl_seconds`, `max_body_mb`) where a turn of the person served
/// before it gave a quantity of the same dimension ([`QUANTITY`]: "to 90 seconds") that, in the
/// key's unit, is the number times a power of ten (10 to 1,000, either way) or the number itself
/// left unconverted, and no quantity the person gave is the number in the key's unit: "writes
/// timeout_ms: 9000 (9 s), but the user asked for 90 seconds at step 0, which is timeout_ms:
/// 90000". A digit lost or a factor of 1,000 applied the wrong way round is a unit error of the
/// agent's own; validators and tests seldom check the value. docs/METHODS.md, "Actions".
pub(super) fn scaled_wrong(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let Some(text) = written_text(ctx, i) else { return };
    // Only a number under a key that names a unit is read: most calls write none, and the
    // person's turns are not read for them.
    if !KEYED_NUMBER.captures_iter(&text).any(|c| c.get(3).is_none() && key_unit(&c[1]).is_some()) {
        return;
    }
    // The quantities the person served gave before the step.
    let mut given: Vec<Given> = Vec::new();
    for j in (0..i).filter(|&j| super::actions::is_human(&t.steps[j])) {
        let content = &t.steps[j].content;
        for c in QUANTITY.captures_iter(content) {
            let (Ok(value), Some(unit)) = (c[1].parse::<f64>(), unit_scale(&c[2])) else { continue };
            // "504s", "bursts of 500s": status codes in the plural, not seconds.
            if &c[2] == "s" && c[1].len() == 3 && (100.0..600.0).contains(&value) {
                continue;
            }
            let m = c.get(0).expect("match");
            // The clause: up to a sentence's end or a semicolon, or " and ".
            let before = &content[..m.start()];
            let start = [before.rfind(['.', '\n', ';', '!', '?']).map(|p| p + 1), before.rfind(" and ").map(|p| p + 5)]
                .into_iter()
                .flatten()
                .max()
                .unwrap_or(0);
            let after = &content[m.end()..];
            let end = [after.find(['.', '\n', ';', '!', '?']), after.find(" and ")]
                .into_iter()
                .flatten()
                .min()
                .map_or(content.len(), |p| m.end() + p);
            let sentence = content[start..end].to_lowercase();
            given.push(Given { step: j, written: m.as_str().to_string(), value, unit, sentence });
        }
    }
    if given.is_empty() {
        return;
    }
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
    for c in KEYED_NUMBER.captures_iter(&text) {
        if c.get(3).is_some() {
            continue;
        }
        let Some(unit) = key_unit(&c[1]) else { continue };
        let Ok(n) = c[2].replace('_', "").parse::<f64>() else { continue };
        if n == 0.0 {
            continue;
        }
        // Each quantity of the key's dimension, in the key's unit (both readings of a size),
        // given in a clause about what the key sets ([`about_key`]), unless it is the only one.
        // One quantity of the dimension in all the person said is the one the key sets.
        let of_dimension = given.iter().filter(|g| g.unit.dimension == unit.dimension).count();
        let same: Vec<&Given> = given
            .iter()
            .filter(|g| g.unit.dimension == unit.dimension && (of_dimension == 1 || about_key(&c[1], &g.sentence)))
            .collect();
        let in_key = |g: &Given| [g.value * g.unit.scale / unit.scale, g.value * g.unit.binary / unit.binary];
        if same.is_empty() || same.iter().any(|g| in_key(g).iter().any(|&e| close(e, n))) {
            continue;
        }
        let off = same.iter().find_map(|g| {
            let e = in_key(g)[0];
            let ratio = e / n;
            // A digit lost or added, a factor of 1,000 the wrong way; for a time, also a factor
            // of 60 or 3,600 (minutes or hours written as seconds).
            let factors: &[f64] =
                if unit.dimension == "time" { &[10.0, 100.0, 1000.0, 60.0, 3600.0] } else { &[10.0, 100.0, 1000.0] };
            let power = factors.iter().any(|&p| close(ratio, p) || close(ratio * p, 1.0));
            let unconverted = close(g.value, n) && !close(g.unit.scale, unit.scale);
            (power || unconverted).then_some((g, e))
        });
        let Some((g, e)) = off else { continue };
        let key = &c[1];
        let number = &c[2];
        let expected = if e.fract() == 0.0 { format!("{e:.0}") } else { format!("{e}") };
        out.push(finding(
            Signal::ArgumentMismatch,
            weights::ARGUMENT_MISMATCH,
            prose![
                format!("writes {key}: {number}, but the user asked for {} at step ", g.written.trim()),
                Part::Step(g.step),
                format!(", which is {key}: {expected}")
            ],
        ));
        return;
    }
}

/// A Go conversion to `time.Duration` of one operand, whole: `time.Duration(` and what it wraps,
/// up to the matching `)` on the same line (group 1).
static GO_DURATION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\btime\.Duration\(([^()\n]*(?:\([^()\n]*\)[^()\n]*)*)\)").unwrap());

/// A name inside an expression: an identifier or a quoted setting name (`intEnv("HTTP_EXPORT_TIMEOUT_SECONDS", 120)`,
/// `cfg.RetryDelayMs`).
static NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[A-Za-z_][A-Za-z0-9_]*").unwrap());

/// Step `i`, an edit, converts to Go's `time.Duration` (a count of nanoseconds) a value whose
/// name gives it another time unit ([`key_unit`]: `HTTP_EXPORT_TIMEOUT_SECONDS`,
/// `cfg.RetryDelayMs`) without scaling it on the same line (no `* time.Second`, `time.Millisecond`
/// … beside the conversion, no `time.ParseDuration`): `time.Duration(intEnv("…_SECONDS", 120))`
/// is a deadline of 120 ns. Only the lines the edit adds are read ([`written_text`]); the unit
/// error compiles, and a test that sets the field directly never meets it. docs/METHODS.md,
/// "Actions".
pub(super) fn unscaled_duration(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    if !super::edits(ctx.trajectory, i) {
        return;
    }
    let Some(text) = written_text(ctx, i) else { return };
    if !text.contains("time.Duration(") {
        return;
    }
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or(line);
        // A unit applied anywhere on the line scales the conversion (`time.Duration(n) * time.Second`).
        let scaled =
            ["time.Nanosecond", "time.Microsecond", "time.Millisecond", "time.Second", "time.Minute", "time.Hour"]
                .iter()
                .any(|u| code.contains(u));
        if scaled {
            continue;
        }
        for c in GO_DURATION.captures_iter(code) {
            let inner = &c[1];
            let unit = NAME
                .find_iter(inner)
                .filter_map(|m| key_unit(m.as_str()).map(|u| (m.as_str(), u)))
                .find(|(_, u)| u.dimension == "time" && (u.scale - 1e-9).abs() > 1e-15);
            let Some((name, _)) = unit else { continue };
            out.push(finding(
                Signal::ArgumentMismatch,
                weights::ARGUMENT_MISMATCH,
                format!(
                    "converts {name} to time.Duration, a count of nanoseconds, without a unit (`{}`): the value is read as nanoseconds",
                    crate::text::clip(c.get(0).map_or("", |m| m.as_str()), 80)
                ),
            ));
            return;
        }
    }
}

/// A scale word after an amount: `9.8 billion`, `USD 9.8bn`, `€2.5 m`. Group 1 is the word.
static SCALE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\A\s?(billion|bn|million|mn|mio|m|thousand|k)\b").unwrap());

/// The amounts `text` writes with a currency ([`super::actions::MONEY`]): the currency as
/// written, the value, the scale word after it (lower case: `billion`, `bn`, `m`; empty when
/// none, one word per scale: `bn` is `billion`) and the amount as written with its scale.
fn amounts(text: &str) -> Vec<(String, f64, &'static str, String)> {
    super::actions::MONEY
        .captures_iter(text)
        .filter_map(|c| {
            let (currency, number) = match (c.get(1), c.get(2), c.get(3), c.get(4)) {
                (Some(cur), Some(n), _, _) | (_, _, Some(n), Some(cur)) => (cur, n),
                _ => return None,
            };
            let value = super::actions::amount_value(number.as_str())?;
            let whole = c.get(0)?;
            let after = &text[whole.end()..];
            let scale = SCALE.captures(after).map_or("", |s| match s[1].to_ascii_lowercase().as_str() {
                "billion" | "bn" => "billion",
                "million" | "mn" | "mio" | "m" => "million",
                _ => "thousand",
            });
            let len = SCALE.find(after).map_or(0, |m| m.end());
            let shown = format!("{}{}", whole.as_str().trim(), &after[..len]);
            Some((currency.as_str().to_string(), value, scale, shown))
        })
        .collect()
}

/// Whether `number`, as written, has at least two significant digits (`9.8`, `49`, `2,540`; not
/// `5`, `10` or `100`): a figure that another amount can share by chance is not compared.
fn distinctive(number: f64) -> bool {
    let digits = format!("{number}").replace(['.', '-'], "");
    digits.trim_start_matches('0').trim_end_matches('0').len() >= 2
}

/// Whether two written currencies can be the same one ([`super::actions::currency_codes`]: `$`
/// is any dollar, `kr` any krone).
fn same_currency(a: &str, b: &str) -> bool {
    let (a, b) = (super::actions::currency_codes(a), super::actions::currency_codes(b));
    a.is_empty() || b.is_empty() || a.iter().any(|x| b.contains(x))
}

/// The amounts with a currency a trajectory's steps write ([`amounts`]), by figure (its bits)
/// and scale word: per currency as written (any case), the first step writing the figure in
/// it, with the amount as written; in step order. Built once per trajectory.
#[derive(Debug, Clone, Default)]
pub struct AmountIndex(std::collections::HashMap<(u64, &'static str), Vec<FirstAmount>>);

/// The first step writing a figure in one currency: the step, the currency and the amount as
/// written.
type FirstAmount = (usize, String, String);

fn amount_index<'a>(ctx: &Context<'a>) -> &'a AmountIndex {
    ctx.facts.amounts.get_or_init(|| {
        let mut index = AmountIndex::default();
        for s in &ctx.trajectory.steps {
            if !super::actions::MONEY.is_match(&s.content) {
                continue;
            }
            for (currency, value, scale, written) in amounts(&s.content) {
                // The first step per currency as written: a figure every step repeats in one
                // currency keeps one entry.
                let firsts = index.0.entry((value.to_bits(), scale)).or_default();
                if !firsts.iter().any(|(_, c, _)| c.eq_ignore_ascii_case(&currency)) {
                    firsts.push((s.index, currency, written));
                }
            }
        }
        index
    })
}

/// Step `i`, an agent's message, thought or call (not the served person's, not a tool output),
/// states an amount with a currency ("EUR 9.8 billion") whose figure and scale an earlier step
/// gives only in another currency ("USD 9.8 billion", a tool output or another agent's report),
/// and no earlier step nor this one writes that figure in this step's currency: the amount was
/// carried over with its currency changed and not converted. Figures with one significant digit
/// (`5`, `100`) are not compared. docs/METHODS.md, "Grounding".
pub(super) fn currency_relabelled(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if !matches!(step.kind, StepKind::Message | StepKind::Thought | StepKind::ToolCall)
        || super::actions::served_person(step)
        || super::is_outside_agent(&step.agent)
        || !super::actions::MONEY.is_match(&step.content)
    {
        return;
    }
    let text = match step.kind {
        StepKind::ToolCall => super::call_strings(&step.content).unwrap_or_else(|| step.content.clone()),
        _ => step.content.clone(),
    };
    let here = amounts(&text);
    let index = amount_index(ctx);
    for (currency, value, scale, shown) in &here {
        if !distinctive(*value) {
            continue;
        }
        // This step writes the figure in another currency too: it compares or converts.
        let alike = |v: f64, s: &str| v.to_bits() == value.to_bits() && s == *scale;
        if here.iter().any(|(c, v, s, _)| alike(*v, s) && !same_currency(c, currency)) {
            continue;
        }
        let Some(earlier) = index.0.get(&(value.to_bits(), *scale)) else { continue };
        let earlier = earlier.iter().take_while(|(j, _, _)| *j < i);
        let mut other = None;
        let mut given = false;
        for (j, c, written) in earlier {
            if same_currency(c, currency) {
                given = true;
                break;
            }
            other.get_or_insert((*j, written));
        }
        if given {
            continue;
        }
        let Some((j, written)) = other else { continue };
        out.push(finding(
            Signal::IgnoredResult,
            weights::MISREAD,
            prose![
                format!("states {shown}, but step "),
                Part::Step(j),
                format!(" gives that figure as {written}, and no step converts it")
            ],
        ));
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_read_with_their_decimal_point_and_thousands() {
        assert_eq!(amount_value("220,000.00"), Some(220000.0));
        assert_eq!(amount_value("220.000,00"), Some(220000.0));
        assert_eq!(amount_value("1,506,050"), Some(1506050.0));
        assert_eq!(amount_value("380.50"), Some(380.5));
        assert_eq!(money(2200.0), "2,200.00");
        assert_eq!(money(15060.5), "15,060.50");
        let c = AMOUNT.captures("still has €220,000.00 outstanding").unwrap();
        assert_eq!(c.get(1).unwrap().as_str(), "220,000.00");
        let m = MEMBER.captures(r#"{"amount_remaining": 220000, "x": 1}"#).unwrap();
        assert_eq!((&m[1], &m[2]), ("amount_remaining", "220000"));
        assert!(MEMBER.captures(r#"{"amount": 220000.5}"#).is_none());
    }

    #[test]
    fn keys_name_their_unit_by_their_last_word() {
        assert_eq!(key_unit("timeout_ms").map(|u| u.scale), Some(1e-3));
        assert_eq!(key_unit("retryDelaySeconds").map(|u| u.scale), Some(1.0));
        assert_eq!(key_unit("MAX_BODY_MB").map(|u| (u.dimension, u.scale)), Some(("size", 1e6)));
        assert_eq!(key_unit("cache-ttl-minutes").map(|u| u.scale), Some(60.0));
        assert_eq!(key_unit("ttl_s").map(|u| u.scale), Some(1.0));
        assert_eq!(key_unit("timeout"), None);
        assert_eq!(key_unit("retries"), None);
        assert_eq!(key_unit("h"), None);
        assert_eq!(key_unit("ms"), None);
        let c = KEYED_NUMBER.captures("    timeout_ms: 300_000\n").unwrap();
        assert_eq!((&c[1], &c[2]), ("timeout_ms", "300_000"));
        let c = KEYED_NUMBER.captures(r#"{"ttl_seconds": 90}"#).unwrap();
        assert_eq!((&c[1], &c[2]), ("ttl_seconds", "90"));
        let q: Vec<_> = QUANTITY
            .captures_iter("get 504s after 5 s; raise it to 90 seconds (50MB max)")
            .map(|c| c[0].to_string())
            .collect();
        assert_eq!(q, ["504s", "5 s", "90 seconds", "50MB"]);
    }
}
