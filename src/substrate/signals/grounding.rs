//! Findings about how an agent's statements rest on the records its tools returned: a value
//! taken from a record the tool marked unavailable, a count the agent states that disagrees with
//! the list it counts, and an answer that uses nothing the lookup before it returned.
//!
//! Tool outputs are read as JSON when they are JSON (the text from the first `{` or `[` to the
//! end); anything else holds no records. Records and lists are indexed once per trajectory
//! ([`Records`]). docs/METHODS.md, "Grounding".

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use serde_json::Value;

use super::{Context, finding, is_id_key, is_outside_agent, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::{StepKind, Trajectory};
use crate::prose;

/// Field names by which a tool marks a record as available (or not): a record whose field of
/// one of these names is `false` is unavailable.
const AVAILABILITY_KEYS: [&str; 9] =
    ["available", "is_available", "in_stock", "instock", "is_in_stock", "active", "is_active", "enabled", "orderable"];

/// At most this many records and lists are kept per tool output (a huge output is cut, not
/// scanned without end).
const MAX_PER_OUTPUT: usize = 500;

/// A list in a tool output: a JSON array, or an object whose values are all objects (a map of
/// records keyed by id).
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// The tool output's step.
    pub step: usize,
    /// The key the list is found under (lower case; the tool's name for a top-level list; a
    /// generic key such as `results` or `data` followed by the tool's name, which then names it).
    pub name: String,
    /// The `name` field of the object holding the list (lower case), if it has one.
    pub owner: Option<String>,
    /// The number of entries.
    pub size: usize,
    /// The count the output gives beside the list (a `total`, `count` or `total_count` member of
    /// the object holding it), which a page of a longer result differs from.
    pub total: Option<usize>,
    /// What says the list is one page of a longer result, as the tool wrote it: a member of the
    /// object holding it or of its paging member (`has_more: true`, `next_cursor: "c_25"`,
    /// `pageInfo.hasNextPage: true`, `page 1 of 5`; [`paging_of`]). `None` when nothing does.
    pub more: Option<String>,
    /// A hash of the tool output's text: the same page fetched again is one page, not two.
    pub digest: u64,
    /// Sub-counts of the entries that are records: per boolean field, how many are `true` and
    /// how many `false`; per short string field (a status), how many have each value. As
    /// `(field=value, count)`.
    pub subsets: Vec<(String, usize)>,
}

/// What the tool outputs of a trajectory say about records: identifiers of records marked
/// unavailable, the first tool output mentioning each identifier outside such a record, and
/// the lists, each in step order.
#[derive(Debug, Clone, Default)]
pub struct Records {
    /// `(identifier, step, field)`: a record at tool output `step` with `field` = `false`.
    pub unavailable: Vec<(String, usize, String)>,
    /// Identifier → the first tool output that mentions it outside an unavailable record.
    pub elsewhere: HashMap<String, usize>,
    /// The lists of every tool output, in step order.
    pub listings: Vec<Listing>,
    /// The words that name each list of `listings`, in the same order ([`list_words`]): found
    /// once per run, as every later message that states a count is matched against them.
    pub listing_words: Vec<Vec<String>>,
    /// Word of [`Records::listing_words`] → the indices into `listings` of the lists it names,
    /// ascending: a count's words find their lists without a scan of every list.
    pub lists_by_word: HashMap<String, Vec<usize>>,
    /// [`Listing::name`] → the indices into `listings` of the lists of that name, ascending: the
    /// pages of one list ([`pages_of`]).
    pub lists_by_name: HashMap<String, Vec<usize>>,
    /// Per list of `listings`, the stems of the words of the name of the tool that returned it
    /// and of the short values its call asked for ([`selection_words`]), which [`names`] reads.
    pub listing_tool_words: Vec<Vec<String>>,
    /// Per step, the last step before it spoken by someone outside the agent system (the user,
    /// the system policy).
    pub last_outside: Vec<Option<usize>>,
    /// The numeric cells of the tables in every step's text ([`super::tables`]).
    pub tables: super::tables::TableIndex,
}

/// The records and lists of every tool output of the trajectory, computed once.
pub fn records<'a>(ctx: &Context<'a>) -> &'a Records {
    ctx.facts.records.get_or_init(|| index(ctx.trajectory))
}

fn index(t: &Trajectory) -> Records {
    let mut out = Records::default();
    let mut last = None;
    for s in &t.steps {
        out.last_outside.push(last);
        if is_outside_agent(&s.role) || is_outside_agent(&s.agent) {
            last = Some(s.index);
        }
    }
    for s in t.steps.iter().filter(|s| s.kind == StepKind::ToolResult) {
        // The JSON of the output, and what a note after it says of paging ("Showing 25 of 112").
        let (value, trailing) = match json_of(&s.content) {
            Some(v) => (v, None),
            None => match json_then_text(&s.content) {
                Some((v, rest)) => (v, prose_paging(rest)),
                None => {
                    text_tables(t, s.index, &mut out);
                    continue;
                }
            },
        };
        let tool = s.tool_name.as_deref().unwrap_or_default().to_lowercase();
        let mut w = Walk {
            step: s.index,
            out: &mut out,
            kept: 0,
            total: None,
            more: None,
            trailing,
            tool: &tool,
            depth: 0,
            digest: digest(&s.content),
        };
        w.more = w.trailing.clone().filter(|_| value.is_array());
        w.value(&value, &tool, None, false);
    }
    out.listing_words = out.listings.iter().map(list_words).collect();
    for (k, l) in out.listings.iter().enumerate() {
        out.lists_by_name.entry(l.name.clone()).or_default().push(k);
    }
    for (k, words) in out.listing_words.iter().enumerate() {
        for w in words {
            let postings = out.lists_by_word.entry(w.clone()).or_default();
            if postings.last() != Some(&k) {
                postings.push(k);
            }
        }
    }
    let call_of: HashMap<usize, usize> = t
        .links
        .iter()
        .filter(|l| l.kind == crate::model::LinkKind::ToolResult && l.from < l.to)
        .map(|l| (l.to, l.from))
        .collect();
    out.listing_tool_words = out
        .listings
        .iter()
        .map(|l| {
            let call = call_of.get(&l.step).copied();
            let tool = call.and_then(|c| t.steps[c].tool_name.as_deref()).unwrap_or("");
            let mut words: Vec<String> =
                tool.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| w.len() > 2).map(stem).collect();
            words.extend(call.map(|c| selection_words(&t.steps[c].content)).unwrap_or_default());
            words
        })
        .collect();
    out.tables = super::tables::index(t);
    out
}

/// Adds the tables that the text output of step `r` prints (psql's or MySQL's result, aligned
/// columns; [`super::tables::row_counts`]) as lists, when the call that produced it is an SQL
/// query: a query's result lists rows of the tables it selects from, so each table is named by
/// them (`card_transactions` for `SELECT … FROM finance.card_transactions`), and the count its
/// footer gives (`(11 rows)`) is its total when it differs from the rows printed.
fn text_tables(t: &Trajectory, r: usize, out: &mut Records) {
    let call = t.links.iter().find(|l| l.to == r && l.kind == crate::model::LinkKind::ToolResult).map(|l| l.from);
    let Some(call) = call.filter(|&c| c < r) else { return };
    let names = sql_tables(&t.steps[call].content);
    if names.is_empty() {
        return;
    }
    for (rows, footer) in super::tables::row_counts(&t.steps[r].content) {
        out.listings.push(Listing {
            step: r,
            name: names.join(" "),
            owner: None,
            size: rows,
            total: footer.filter(|&f| f != rows),
            more: None,
            digest: digest(&t.steps[r].content),
            subsets: Vec::new(),
        });
    }
}

/// The tables an SQL query in a call's text selects rows of (after `FROM` or `JOIN`), without
/// their schema, in lower case: `card_transactions` for `FROM finance.card_transactions`. Empty
/// when the text holds no `SELECT`, or when the query's rows are not the tables' rows: it selects
/// `DISTINCT` values, groups (`GROUP BY`) or aggregates (`COUNT(`, `SUM(`, `AVG(`, `MIN(`,
/// `MAX(`).
fn sql_tables(call: &str) -> Vec<String> {
    static FROM: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r#"(?i)\b(?:from|join)\s+[`"]?([a-z_][\w.`"]*)"#).expect("a valid pattern"));
    static NOT_ROWS: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"(?i)\bdistinct\b|\bgroup\s+by\b|\b(?:count|sum|avg|min|max)\s*\(").expect("a valid pattern")
    });
    if !call.to_ascii_lowercase().contains("select") || NOT_ROWS.is_match(call) {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for c in FROM.captures_iter(call) {
        let name = c[1].replace(['`', '"'], "");
        let name = name.rsplit('.').next().unwrap_or_default().to_lowercase();
        if name.len() > 2 && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// The JSON value of a tool output: the text from its first `{` or `[` to its end.
pub(super) fn json_of(content: &str) -> Option<Value> {
    let start = content.find(['{', '['])?;
    serde_json::from_str(content[start..].trim_end()).ok()
}

/// A tool output that opens with a JSON object or array and goes on in text (a note after the
/// data: `[…]\nShowing 25 of 112 tickets.`): the JSON value and the text after it. `None` when the
/// output does not open with JSON (after white space) or nothing follows it.
fn json_then_text(content: &str) -> Option<(Value, &str)> {
    let body = content.trim_start();
    if !body.starts_with(['{', '[']) {
        return None;
    }
    let mut values = serde_json::Deserializer::from_str(body).into_iter::<Value>();
    let value = values.next()?.ok()?;
    let rest = body.get(values.byte_offset()..)?;
    (!rest.trim().is_empty()).then_some((value, rest))
}

/// What a sentence says of a list being one page of a longer result, as written (clipped to 60
/// characters): "showing 25 of 112", "results 1-25 of 112" (after a noun, a range only), "page 1
/// of 5" (a shown count or page
/// below the whole), "more results are available", "use page=2 for more", "results truncated".
/// `None` when the text says none of these, or says the whole was reached ("showing 12 of 12",
/// a log that ends "fetched page 2 of 2").
pub(super) fn prose_paging(text: &str) -> Option<String> {
    static SHOWN: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(concat!(
            r"(?i)\b(?:(?P<verb>showing|displaying|listing)|results?|items?|rows?|entries|records)\s+",
            r"(?:the\s+)?(?:first\s+|top\s+)?(?:(?P<from>\d[\d,]*)\s*(?:-|–|to)\s*)?(?P<shown>\d[\d,]*)\s+",
            r"(?:\w+\s+)?(?:of|out of)\s+(?:about\s+|approximately\s+|~)?(?P<whole>\d[\d,]*)\b",
        ))
        .expect("a valid pattern")
    });
    static PAGE: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"(?i)\bpage\s+(\d+)\s+(?:of|/)\s+(\d+)\b").expect("a valid pattern"));
    static MORE: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(concat!(
            r"(?i)\b(?:more|additional|further)\s+(?:results|items|records|rows|entries|matches|pages)\s+",
            r"(?:are\s+|is\s+)?available\b",
            r"|\b(?:use|pass|set|request|with)\s+`?(?:page|cursor|offset|next_page|page_token|next_cursor|starting_after|after)\s*[=:]\s*[^\s,;.]+",
            r"|\b(?:results?|output|list|response)\s+(?:was\s+|were\s+|is\s+|has\s+been\s+)?truncated\b",
            r"|\bthere\s+(?:are|is)\s+more\s+(?:results|items|records|rows|entries|matches)\b",
        ))
        .expect("a valid pattern")
    });
    let number = |m: Option<regex::Match<'_>>| m.and_then(|m| m.as_str().replace(',', "").parse::<u64>().ok());
    let quote = |m: regex::Match<'_>| crate::text::clip(m.as_str().trim(), 60);
    // A text that also tells the last part reached ("fetched page 2 of 2", "showing 9 of 9")
    // says the whole was fetched.
    let mut part = None;
    for c in SHOWN.captures_iter(text) {
        let (Some(shown), Some(whole)) = (number(c.name("shown")), number(c.name("whole"))) else { continue };
        // After a noun only a range says it ("results 1-25 of 112"; "items 3 of 5" may be a part).
        if c.name("verb").is_none() && c.name("from").is_none() {
            continue;
        }
        if shown >= whole {
            return None;
        }
        part = part.or(c.get(0));
    }
    for c in PAGE.captures_iter(text) {
        let (Some(page), Some(pages)) = (number(c.get(1)), number(c.get(2))) else { continue };
        if page >= pages {
            return None;
        }
        part = part.or(c.get(0));
    }
    part.or_else(|| MORE.find(text)).map(quote)
}

struct Walk<'r> {
    step: usize,
    out: &'r mut Records,
    kept: usize,
    /// The count given beside the array walked next ([`Listing::total`]).
    total: Option<usize>,
    /// The paging marker given beside the array walked next ([`Listing::more`]).
    more: Option<String>,
    /// What a note after the output's JSON says of paging ([`prose_paging`]): the paging of the
    /// output's top-level list.
    trailing: Option<String>,
    /// The name of the tool whose output is walked (lower case), which names a list kept under a
    /// generic key ([`GENERIC_KEYS`]) at the output's top level.
    tool: &'r str,
    /// How deep the value walked lies: 1 for the output itself, 2 for its members.
    depth: usize,
    /// [`digest`] of the output walked.
    digest: u64,
}

/// A hash of a text ([`Listing::digest`]).
fn digest(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// Keys that hold a list without naming what it lists (`{"results": [...]}`, `{"data": [...]}`):
/// such a list is named by its key and by the tool that returned it (`list_tickets`).
const GENERIC_KEYS: [&str; 16] = [
    "results", "result", "items", "data", "records", "entries", "hits", "rows", "nodes", "edges", "values", "objects",
    "list", "elements", "matches", "payload",
];

/// Member names whose `true` says a list is one page of a longer result.
const MORE_FLAGS: [&str; 8] =
    ["has_more", "hasmore", "more", "has_next", "hasnext", "has_next_page", "hasnextpage", "truncated"];

/// Member names whose non-empty value (a cursor, a token, a URL, a page number) points at the
/// next page of a result.
const NEXT_KEYS: [&str; 10] = [
    "next_cursor",
    "nextcursor",
    "next_page",
    "nextpage",
    "next_page_token",
    "nextpagetoken",
    "next",
    "next_token",
    "nexttoken",
    "next_url",
];

/// What in an object says the list it holds is one page of a longer result, written as the tool
/// wrote it: a flag of [`MORE_FLAGS`] set to `true` (`has_more: true`), a cursor, token, URL or
/// page number under one of [`NEXT_KEYS`] that is not null, empty or `false` (`next_cursor:
/// "c_25"`), or a `page` below `total_pages` / `pages` / `page_count` (`page 1 of 5`); also in
/// a member object of [`PAGING_HOLDERS`] (`"response_metadata": {"next_cursor": …}`,
/// `"pageInfo": {"hasNextPage": true}`). The shapes of the Stripe, Slack, GitHub GraphQL,
/// Google and JSON:API list responses.
fn paging_of(map: &serde_json::Map<String, Value>) -> Option<String> {
    paging_here(map).or_else(|| {
        map.iter()
            .filter(|(k, _)| PAGING_HOLDERS.contains(&k.to_ascii_lowercase().as_str()))
            .find_map(|(k, v)| Some(format!("{k}.{}", paging_here(v.as_object()?)?)))
    })
}

/// Member names of an object that holds a list's paging state beside it.
const PAGING_HOLDERS: [&str; 8] =
    ["pagination", "paging", "page_info", "pageinfo", "meta", "response_metadata", "links", "cursor"];

/// [`paging_of`] for the members of `map` itself; a short text member that says so in words
/// (`"note": "Showing 25 of 112 tickets; use page=2 for more"`, [`prose_paging`]) counts too.
fn paging_here(map: &serde_json::Map<String, Value>) -> Option<String> {
    let get = |names: &[&str]| {
        map.iter().find(|(k, _)| {
            let k = k.to_ascii_lowercase();
            names.contains(&k.as_str())
        })
    };
    for (k, v) in map {
        let lower = k.to_ascii_lowercase();
        if MORE_FLAGS.contains(&lower.as_str()) && *v == Value::Bool(true) {
            return Some(format!("{k}: true"));
        }
        if NEXT_KEYS.contains(&lower.as_str()) {
            match v {
                Value::String(t) if !t.trim().is_empty() => {
                    let t: String = t.chars().take(40).collect();
                    return Some(format!("{k}: \"{t}\""));
                }
                Value::Number(n) => return Some(format!("{k}: {n}")),
                Value::Object(o) if !o.is_empty() => return Some(format!("{k}: {{…}}")),
                _ => {}
            }
        }
    }
    // A note speaks of the object's list only when it holds one ("Showing 5 of 9 orders" beside
    // `orders` and `payment_methods` may speak of either).
    let lists = map.values().filter(|v| v.is_array()).count();
    if let Some((k, said)) = map
        .iter()
        .filter(|_| lists == 1)
        .filter_map(|(k, v)| Some((k, v.as_str().filter(|t| t.len() <= 400)?)))
        .find_map(|(k, t)| Some((k, prose_paging(t)?)))
    {
        return Some(format!("{k}: \"{said}\""));
    }
    let page = get(&["page", "page_number", "current_page"]).and_then(|(_, v)| v.as_u64())?;
    let pages = get(&["total_pages", "pages", "page_count", "num_pages"]).and_then(|(_, v)| v.as_u64())?;
    // Pages counted from 0 (`page: 0` of 1) or from 1.
    let more = if page == 0 { 1 < pages } else { page < pages };
    more.then(|| format!("page {page} of {pages}"))
}

/// Member names under which an output gives the number of entries of the list beside them.
const TOTAL_KEYS: [&str; 7] = ["total", "count", "total_count", "totalcount", "total_results", "num_results", "hits"];

/// The count an object gives for the list it holds: a whole number under one of [`TOTAL_KEYS`].
fn total_of(map: &serde_json::Map<String, Value>) -> Option<usize> {
    map.iter()
        .find(|(k, v)| v.is_u64() && TOTAL_KEYS.contains(&k.to_ascii_lowercase().as_str()))
        .and_then(|(_, v)| usize::try_from(v.as_u64()?).ok())
}

impl Walk<'_> {
    /// Walks `v`, found under `key` in an object whose `name` field is `owner`; `inside` says
    /// whether `v` lies in a record marked unavailable.
    fn value(&mut self, v: &Value, key: &str, owner: Option<&str>, inside: bool) {
        self.depth += 1;
        self.value_at(v, key, owner, inside);
        self.depth -= 1;
    }

    /// [`Walk::value`] at the current depth.
    fn value_at(&mut self, v: &Value, key: &str, owner: Option<&str>, inside: bool) {
        if self.kept >= MAX_PER_OUTPUT {
            return;
        }
        match v {
            Value::Array(items) => {
                let total = self.total.take();
                let more = self.more.take();
                self.listing(key, owner, items.iter().collect(), total, more);
                for item in items {
                    self.value(item, key, owner, inside);
                }
            }
            Value::Object(map) => {
                if map.len() >= 2 && map.values().all(Value::is_object) {
                    self.listing(key, owner, map.values().collect(), None, None);
                }
                let total = total_of(map);
                let one_list = map.values().filter(|v| v.is_array()).count() == 1;
                let more = paging_of(map).or_else(|| self.trailing.clone().filter(|_| self.depth == 1 && one_list));
                let off =
                    map.iter().find(|(k, v)| is_availability(k) && **v == Value::Bool(false)).map(|(k, _)| k.clone());
                let name = map.get("name").and_then(Value::as_str).map(str::to_lowercase);
                // A map of records keyed by id: each key names its record.
                let keyed = map.len() >= 2 && map.values().all(Value::is_object);
                for (k, child) in map {
                    if keyed {
                        // The record's own field that marks it unavailable, if any.
                        let child_off = child.as_object().and_then(|c| {
                            c.iter()
                                .find(|(ck, cv)| is_availability(ck) && **cv == Value::Bool(false))
                                .map(|(ck, _)| ck.clone())
                        });
                        self.id(k, child_off.is_some() || inside, child_off.as_deref());
                    }
                    if is_id_key(k) {
                        match child {
                            Value::String(s) => self.id(s, inside || off.is_some(), off.as_deref()),
                            Value::Number(n) => self.id(&n.to_string(), inside || off.is_some(), off.as_deref()),
                            _ => {}
                        }
                    }
                    self.total = if child.is_array() { total } else { None };
                    self.more = if child.is_array() { more.clone() } else { None };
                    self.value(child, &k.to_lowercase(), name.as_deref(), inside || off.is_some());
                }
            }
            Value::String(s) if !inside => self.id(s, false, None),
            _ => {}
        }
    }

    fn id(&mut self, id: &str, unavailable: bool, field: Option<&str>) {
        let id = id.trim();
        // Identifiers: a single token of at least 4 characters with a digit.
        if id.len() < 4 || id.len() > 80 || id.contains(char::is_whitespace) || !id.chars().any(|c| c.is_ascii_digit())
        {
            return;
        }
        self.kept += 1;
        match (unavailable, field) {
            (true, Some(f)) => {
                if !self.out.unavailable.iter().any(|(i, s, _)| i == id && *s == self.step) {
                    self.out.unavailable.push((id.to_string(), self.step, f.to_string()));
                }
            }
            (true, None) => {}
            (false, _) => {
                self.out.elsewhere.entry(id.to_string()).or_insert(self.step);
            }
        }
    }

    fn listing(
        &mut self,
        key: &str,
        owner: Option<&str>,
        entries: Vec<&Value>,
        total: Option<usize>,
        more: Option<String>,
    ) {
        if entries.is_empty() {
            return;
        }
        self.kept += 1;
        let mut subsets: HashMap<String, usize> = HashMap::new();
        for e in entries.iter().filter_map(|e| e.as_object()) {
            for (k, v) in e {
                let label = match v {
                    Value::Bool(b) => format!("{}={b}", k.to_lowercase()),
                    Value::String(s) if s.len() <= 40 && !is_id_key(k) => {
                        format!("{}={}", k.to_lowercase(), s.to_lowercase())
                    }
                    _ => continue,
                };
                *subsets.entry(label).or_default() += 1;
            }
        }
        let mut subsets: Vec<(String, usize)> = subsets.into_iter().filter(|(_, n)| *n < entries.len()).collect();
        subsets.sort();
        self.out.listings.push(Listing {
            step: self.step,
            // Only at the top: a generic list inside each record (a ticket's `items`) is no list
            // of what the tool returns.
            name: if GENERIC_KEYS.contains(&key) && !self.tool.is_empty() && self.depth <= 2 {
                format!("{key} {}", self.tool)
            } else {
                key.to_string()
            },
            owner: owner.map(str::to_string),
            size: entries.len(),
            total,
            more,
            digest: self.digest,
            subsets,
        });
    }
}

fn is_availability(k: &str) -> bool {
    AVAILABILITY_KEYS.contains(&k.to_ascii_lowercase().as_str())
}

/// Whether step `i` is an agent's own message, thought or call (not a tool output, not the user,
/// not the system policy).
pub(super) fn agent_step(t: &Trajectory, i: usize) -> bool {
    let s = &t.steps[i];
    matches!(s.kind, StepKind::Message | StepKind::ToolCall | StepKind::Thought)
        && !is_outside_agent(&s.agent)
        && !is_outside_agent(&s.role)
        && !s.role.eq_ignore_ascii_case("tool")
}

/// Step `i` offers or uses an identifier that only a record marked unavailable gave: the
/// identifier is in the step's text (as a whole word), an earlier tool output marks its record
/// unavailable, and no tool output before step `i` mentions it outside such a record (an item
/// the user already owns, listed in an order, is not an offer). A line that itself says the
/// item is unavailable does not count.
pub(super) fn unavailable(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    if !agent_step(t, i) {
        return;
    }
    let r = records(ctx);
    if r.unavailable.is_empty() {
        return;
    }
    let content = &t.steps[i].content;
    for (id, at, field) in r.unavailable.iter().filter(|(_, at, _)| *at < i) {
        if r.elsewhere.get(id).is_some_and(|&e| e < i) {
            continue;
        }
        let Some(line) = line_with(content, id) else { continue };
        let low = line.to_lowercase();
        if ["unavailable", "not available", "out of stock", "sold out", "no longer", "isn't available"]
            .iter()
            .any(|w| low.contains(w))
        {
            continue;
        }
        out.push(finding(
            Signal::UnavailableValue,
            weights::UNAVAILABLE_VALUE,
            prose![format!("uses {id}, whose record at step "), Part::Step(*at), format!(" says \"{field}\": false")],
        ));
        return;
    }
}

/// The line of `content` holding `id` as a whole word.
fn line_with<'c>(content: &'c str, id: &str) -> Option<&'c str> {
    content.match_indices(id).find_map(|(p, m)| {
        let before = content[..p].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after = content[p + m.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        (before && after).then(|| {
            let start = content[..p].rfind('\n').map_or(0, |x| x + 1);
            let end = content[p..].find('\n').map_or(content.len(), |x| p + x);
            &content[start..end]
        })
    })
}

/// A count an agent states: the number, the words after it up to its plural noun (lower case)
/// and the text as written.
#[derive(Debug, Clone, PartialEq)]
struct Count {
    n: usize,
    /// The byte range of the count's number and phrase in the message.
    at: std::ops::Range<usize>,
    phrase: Vec<String>,
    text: String,
}

/// Number words a count may be written with.
const NUMBER_WORDS: [&str; 11] =
    ["two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];

/// Nouns of time and measure: "3 days", "500 pieces" are quantities, not counts of a list.
const MEASURES: [&str; 14] = [
    "seconds", "minutes", "hours", "days", "weeks", "months", "years", "business", "percent", "pieces", "times",
    "dollars", "inches", "points",
];

/// Words after a counted noun that restrict it to a selection the list does not mark ("two
/// orders containing water bottles"): such a count cannot be checked against the list.
const RESTRICTIVE: [&str; 8] = ["containing", "with", "that", "which", "where", "matching", "whose", "including"];

/// Words before a counted noun that select nothing ("3 different options").
const NEUTRAL: [&str; 9] =
    ["different", "total", "other", "more", "separate", "distinct", "unique", "individual", "possible"];

/// The counts a message states: a whole number (digits, or a number word from two to twelve)
/// not preceded by a currency sign, `#`, a digit or a decimal point, followed by up to four
/// words of which the last is a plural (ends in `s`) that is not a measure ([`MEASURES`]) and
/// is not followed by a restrictive word ([`RESTRICTIVE`]).
fn counts(content: &str) -> Vec<Count> {
    static COUNT: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)(^|[^\w$#.,€£-])(\d{1,3}|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)((?:[ \t]+[a-z][a-z0-9'-]*){1,5})",
        )
        .expect("a valid pattern")
    });
    let mut out = Vec::new();
    for c in COUNT.captures_iter(content) {
        let num = c[2].to_lowercase();
        let n = num.parse::<usize>().ok().or_else(|| NUMBER_WORDS.iter().position(|w| *w == num).map(|p| p + 2));
        let Some(n) = n else { continue };
        let words: Vec<String> = c[3].split_whitespace().map(str::to_lowercase).collect();
        // The phrase ends at its first plural noun, within four words.
        let Some(end) = words.iter().take(4).position(|w| w.len() > 3 && w.ends_with('s') && !w.ends_with("ss")) else {
            continue;
        };
        if MEASURES.contains(&words[end].as_str())
            || words.get(end + 1).is_some_and(|w| RESTRICTIVE.contains(&w.as_str()))
        {
            continue;
        }
        let phrase: Vec<String> = words[..=end].to_vec();
        let written: Vec<&str> = c[3].split_whitespace().take(end + 1).collect();
        let at = c.get(2).map_or(0, |m| m.start())..c.get(3).map_or(0, |m| m.end());
        out.push(Count { n, at, text: format!("{} {}", &c[2], written.join(" ")), phrase });
    }
    out
}

/// The stem of a word for matching a phrase with a list's name: lower case, without a plural
/// `s` or `es`.
fn stem(w: &str) -> String {
    let w = w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
    w.strip_suffix("es")
        .filter(|s| s.ends_with(['s', 'x', 'h']))
        .or_else(|| w.strip_suffix('s'))
        .unwrap_or(&w)
        .to_string()
}

/// Whether a count's phrase names a list: a word of the phrase is (by stem) a word of the
/// list's key or of its holder's `name` (`"available t-shirt options"` and the variants of the
/// record named `T-Shirt`; `"3 orders"` and the list `orders`), and every other word before the
/// noun either names it too, selects nothing ([`NEUTRAL`]) or is a field or value by which the
/// list's entries are counted in its subsets (`available`, `pending`): "2 pending orders"
/// cannot be checked against a list of order ids that says nothing of their status.
///
/// `tool` holds the stems of the words of the tool's name that produced the list and of the
/// values the call asked for: a lookup named `get_free_slots` lists free slots, so "3 free
/// slots" counts that list, and a search called with `"priority": "P2"` lists P2 entries, so "4
/// P2 tickets" counts it.
///
/// The count check finds the lists a word names through [`Records::lists_by_word`] and asks
/// [`names_rest`] the rest; this is the whole test in one, for the tests.
#[cfg(test)]
fn names(phrase: &[String], l: &Listing, tool: &[String]) -> bool {
    let words = list_words(l);
    phrase_stems(phrase).iter().any(|w| words.contains(w)) && names_rest(phrase, l, &words, tool)
}

/// The second half of [`names`], for a list a word of the phrase names already: every other word
/// before the noun names it too (`words`, its [`list_words`]), selects nothing, is a word of
/// `tool`, or is a field or value of its subsets.
fn names_rest(phrase: &[String], l: &Listing, words: &[String], tool: &[String]) -> bool {
    let selects = |w: &str| {
        let st = stem(w);
        words.contains(&st)
            || tool.contains(&st)
            || NEUTRAL.contains(&w)
            || l.subsets.iter().any(|(label, _)| label.split(['=', '_', ' ']).any(|p| p == w || stem(p) == st))
    };
    // A compound selects when each of its parts does ("high-priority" after `"priority": "high"`),
    // its short joining words aside ("at-risk", "out-of-stock").
    phrase[..phrase.len().saturating_sub(1)].iter().all(|w| {
        selects(w)
            || w.contains('-') && {
                let parts: Vec<&str> = w.split('-').filter(|p| p.len() > 2).collect();
                !parts.is_empty() && parts.into_iter().all(selects)
            }
    })
}

/// The stems of a list's key and of its holder's name, the holder's name also whole.
fn list_words(l: &Listing) -> Vec<String> {
    let split = |s: &str| -> Vec<String> { s.split(['_', ' ', '.']).filter(|w| w.len() > 2).map(stem).collect() };
    let mut words = split(&l.name);
    if let Some(o) = &l.owner {
        words.push(stem(o));
        words.extend(split(o));
    }
    words
}

/// The stems of a phrase's words longer than two characters, by which its lists are found.
fn phrase_stems(phrase: &[String]) -> Vec<String> {
    phrase.iter().map(|w| stem(w)).filter(|w| w.len() > 2).collect()
}

/// Step `i`, an agent's message, states a count of a list that a tool output since the last
/// user turn lists, and the count is neither the list's length nor the size of one of its
/// subsets (its entries with a boolean field true or false, or with one value of a status
/// field).
pub(super) fn count_mismatch(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    if let Some((c, step, tail)) = mismatch(ctx, i) {
        out.push(finding(
            Signal::CountMismatch,
            weights::COUNT_MISMATCH,
            prose![format!("says \"{}\"; the list it counts at step ", c.text), Part::Step(step), tail],
        ));
    }
}

/// The first count of step `i` that disagrees with the list it counts: the count, the step of
/// the list's last page, and the rest of the finding's sentence.
fn mismatch(ctx: &Context<'_>, i: usize) -> Option<(Count, usize, String)> {
    let t = ctx.trajectory;
    if !agent_step(t, i) || t.steps[i].kind != StepKind::Message {
        return None;
    }
    mismatch_in(ctx, i, counted_lists(ctx, i))
}

/// [`mismatch`] over the counts of step `i` with their lists, already read.
fn mismatch_in(ctx: &Context<'_>, i: usize, lists: Vec<Counted<'_>>) -> Option<(Count, usize, String)> {
    let t = ctx.trajectory;
    for Counted { count: c, named, pages } in lists {
        let Some(last) = named.last() else { continue };
        let tail = if agrees(&c, &named, pages) {
            // A count of the last page alone, told as the whole when the tool said more remain
            // and no later page was fetched.
            match &last.more {
                Some(more)
                    if last.size == c.n
                        && pages == c.n
                        && last.total.is_none_or(|n| n > c.n)
                        && !told_partial(&t.steps[i].content, &c.at)
                        && !asked_for(ctx, i, last, c.n) =>
                {
                    let total = last.total.map(|n| format!("; total {n}")).unwrap_or_default();
                    format!(" is one page of a longer result ({more}{total}), and no further page was fetched")
                }
                _ => continue,
            }
        } else {
            let subsets: Vec<String> = last
                .subsets
                .iter()
                .filter(|(s, _)| s.ends_with("=true"))
                .take(2)
                .map(|(s, k)| format!("{k} with {s}"))
                .collect();
            let detail = if subsets.is_empty() { String::new() } else { format!(" ({})", subsets.join(", ")) };
            let total = last.total.map(|n| format!(" (total {n})")).unwrap_or_default();
            format!(" has {}{detail}{total}", last.size)
        };
        return Some((c, last.step, tail));
    }
    None
}

/// How many of the lists a count's phrase names, the most recent ones, it is checked against: a
/// count tells of what the agent just looked up, and a run of thousands of lookups under one
/// user turn is not read back to its start for each message.
const MAX_NAMED_LISTS: usize = 64;

/// A count a message states with the lists it counts ([`counted_lists`]).
struct Counted<'a> {
    count: Count,
    /// The lists the count's phrase names, in step order: the [`MAX_NAMED_LISTS`] most recent.
    named: Vec<&'a Listing>,
    /// The entries of the last named list and of the pages fetched before it ([`pages_of`]).
    pages: usize,
}

/// The counts step `i` states ([`counts`]), each with the lists of the tool outputs since the
/// last user turn that its phrase names ([`names`]; the [`MAX_NAMED_LISTS`] most recent), in step
/// order, and the pages of the last one; counts that name no list are left out. A run without
/// user turns has every earlier list in range.
fn counted_lists<'a>(ctx: &Context<'a>, i: usize) -> Vec<Counted<'a>> {
    let t = ctx.trajectory;
    let r = records(ctx);
    let from = r.last_outside.get(i).copied().flatten().map_or(0, |u| u + 1);
    // The lists are in step order: the ones since the last user turn are one range.
    let (a, b) = (r.listings.partition_point(|l| l.step < from), r.listings.partition_point(|l| l.step < i));
    let range = a..b.max(a);
    if range.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for c in counts(&t.steps[i].content) {
        // Only a list a word of the phrase names is weighed further (the test [`names`] starts
        // with), found from the list words indexed once per run; the most recent of them only.
        let stems = phrase_stems(&c.phrase);
        // Each word's lists in range, walked from the most recent back, merged.
        let postings: Vec<&[usize]> = stems
            .iter()
            .filter_map(|w| r.lists_by_word.get(w))
            .map(|p| {
                let (lo, hi) = (p.partition_point(|&k| k < range.start), p.partition_point(|&k| k < range.end));
                &p[lo..hi]
            })
            .collect();
        let mut ends: Vec<usize> = postings.iter().map(|p| p.len()).collect();
        let mut found: Vec<usize> = Vec::new();
        while found.len() < MAX_NAMED_LISTS {
            let Some(k) = (0..postings.len()).filter(|&w| ends[w] > 0).map(|w| postings[w][ends[w] - 1]).max() else {
                break;
            };
            for w in 0..postings.len() {
                if ends[w] > 0 && postings[w][ends[w] - 1] == k {
                    ends[w] -= 1;
                }
            }
            if names_rest(&c.phrase, &r.listings[k], &r.listing_words[k], &r.listing_tool_words[k]) {
                found.push(k);
            }
        }
        let Some(&last) = found.first() else { continue };
        found.reverse();
        let pages = pages_of(r, range.clone(), last);
        out.push(Counted { count: c, named: found.into_iter().map(|k| &r.listings[k]).collect(), pages });
    }
    out
}

/// The entries of list `last` (an index into [`Records::listings`]) and of the pages of the same
/// list fetched before it in `range`: walking back over the lists of its name, each earlier one
/// that said more remain ([`Listing::more`]) is a page before it ("33 tickets" over pages of 25
/// and 8, however many pages); the first that did not ends the pages. The same output fetched
/// again (a retry of a page) is one page.
fn pages_of(r: &Records, range: std::ops::Range<usize>, last: usize) -> usize {
    let l = &r.listings[last];
    let Some(same) = r.lists_by_name.get(&l.name) else { return l.size };
    let (lo, hi) = (same.partition_point(|&k| k < range.start), same.partition_point(|&k| k < last));
    let mut seen: HashSet<u64> = HashSet::from([l.digest]);
    let mut sum = l.size;
    for &k in same[lo..hi].iter().rev() {
        let page = &r.listings[k];
        if !seen.insert(page.digest) {
            continue;
        }
        if page.more.is_none() {
            break;
        }
        sum += page.size;
    }
    sum
}

/// Whether count `c` agrees with the lists it names: the pages of the last one (`pages`,
/// [`pages_of`]), the summed entries of the named lists of the last one's name (lookups of one
/// kind added up, a list fetched again counted once), a list's length, the total given beside
/// it, or the size of one of its subsets.
fn agrees(c: &Count, named: &[&Listing], pages: usize) -> bool {
    let summed = || {
        let Some(last) = named.last() else { return 0 };
        let mut seen: HashSet<u64> = HashSet::new();
        named.iter().filter(|l| l.name == last.name && seen.insert(l.digest)).map(|l| l.size).sum::<usize>()
    };
    pages == c.n
        || summed() == c.n
        || named.iter().any(|l| l.size == c.n || l.total == Some(c.n) || l.subsets.iter().any(|(_, k)| *k == c.n))
}

/// The byte offsets in step `i`'s text of the counts it states of a list a tool output gave,
/// which `signals::unsourced` must not call unsourced: those that agree with it ([`agrees`]: a
/// number of entries counted, not invented, "14 open P1 tickets" after a list of 14), and the
/// one [`count_mismatch`] reports (its number's source is the list it miscounts: told as a
/// miscount, not a second time as a value with no source).
pub(super) fn counted(ctx: &Context<'_>, i: usize) -> Vec<usize> {
    let t = ctx.trajectory;
    if !agent_step(t, i) {
        return Vec::new();
    }
    let lists = counted_lists(ctx, i);
    let mut out: Vec<usize> =
        lists.iter().filter(|c| agrees(&c.count, &c.named, c.pages)).map(|c| c.count.at.start).collect();
    if t.steps[i].kind == StepKind::Message {
        out.extend(mismatch_in(ctx, i, lists).map(|(c, _, _)| c.at.start));
    }
    out
}

/// Whether the user asked for `n` entries and the call that returned `l` fetched that many: a
/// `limit`, `page_size`, `per_page`, `first`, `max_results`, `top` or `count` argument of `n`,
/// and the user's last turn before step `i` writes `n` ("show me 25 open tickets"). The page is
/// then what was asked for.
fn asked_for(ctx: &Context<'_>, i: usize, l: &Listing, n: usize) -> bool {
    let t = ctx.trajectory;
    let Some(call) = super::links(ctx).produced_by.get(l.step).copied().flatten() else { return false };
    let Some(args) = super::call_arguments(&t.steps[call].content) else { return false };
    const LIMITS: [&str; 8] = ["limit", "page_size", "pagesize", "per_page", "first", "max_results", "top", "count"];
    let limited =
        args.iter().any(|(k, v)| LIMITS.contains(&k.to_ascii_lowercase().as_str()) && v.as_u64() == Some(n as u64));
    let Some(u) = records(ctx).last_outside.get(i).copied().flatten() else { return false };
    limited && t.steps[u].content.split(|c: char| !c.is_ascii_digit()).any(|w| w == n.to_string())
}

/// Whether the sentence of `content` around a count (`at`) tells it as a part ("the first 25",
/// "page 1 lists 25", "at least 25", "25 so far", "25+ tickets", "25 or more", "showing 25 of
/// them", "a sample of 25"): then it is no claim about the whole list.
fn told_partial(content: &str, at: &std::ops::Range<usize>) -> bool {
    static PARTIAL: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b(?:first|page|pages|at least|so far|or more|more than|over|top|showing|shown|sample|partial|incomplete|truncated|paginated|more (?:results|pages|entries|items|remain)|next)\b|\d\+",
        )
        .expect("a valid pattern")
    });
    let sentence = crate::text::sentence_around(content, at.start, at.end);
    PARTIAL.is_match(&content[sentence])
}

/// The stems of the words of the short values a call asked for (its JSON string arguments of at
/// most three words: a filter such as `"team": "payments"`, `"priority": "P1"`): the list it
/// returned is already that selection. Words of two characters count (`p1`). The name of a
/// top-level argument whose value is such a word is one too (`priority` of `"priority": "high"`),
/// so that a compound of both ("high-priority tickets") names the selection.
fn selection_words(call: &str) -> Vec<String> {
    let Some(strings) = super::call_strings(call) else { return Vec::new() };
    let word = |w: &&str| w.chars().count() >= 2 && w.chars().any(char::is_alphabetic);
    let short = |v: &str| v.split_whitespace().count() <= 3;
    // An argument that bounds or excludes (`max_priority`, `exclude_status`): neither its name nor
    // its value is the selection made.
    const BOUNDS: [&str; 11] =
        ["max", "min", "exclude", "excluding", "not", "without", "except", "before", "after", "until", "since"];
    let bounding =
        |k: &str| k.split(|c: char| !c.is_alphanumeric()).any(|p| BOUNDS.contains(&p.to_ascii_lowercase().as_str()));
    let args = super::call_arguments(call).unwrap_or_default();
    let excluded: Vec<&str> = args.iter().filter(|(k, _)| bounding(k)).filter_map(|(_, v)| v.as_str()).collect();
    let mut out: Vec<String> = strings
        .lines()
        .filter(|v| short(v) && !excluded.contains(v))
        .flat_map(|v| v.split(|c: char| !c.is_alphanumeric()))
        .filter(word)
        .map(stem)
        .collect();
    // The argument's name, when its value selects by it: not a negation (`"archived": "false"`,
    // `"none"`), not a bound or an exclusion.
    const NEGATIONS: [&str; 6] = ["false", "no", "none", "null", "0", "off"];
    for (k, v) in &args {
        let Some(v) = v.as_str() else { continue };
        if short(v)
            && v.split(|c: char| !c.is_alphanumeric()).any(|w| word(&w))
            && !NEGATIONS.contains(&v.trim().to_ascii_lowercase().as_str())
            && !bounding(k)
        {
            out.extend(k.split(|c: char| !c.is_alphanumeric()).filter(word).map(stem));
        }
    }
    out
}

/// How far back (in steps, from the result an answer follows) [`ignored_result`] looks for the
/// lookups of the turn.
const MAX_LOOKUPS: usize = 64;

/// At most this many values of one tool result are read for [`ignored_result`].
const MAX_RESULT_VALUES: usize = 200;

/// The values a lookup returned that its caller did not already know: the leaves of the result's
/// JSON (strings up to 120 characters, numbers; not identifiers, not booleans) whose text is not
/// in `known` (the call, the task, the user's last turn), at most [`MAX_RESULT_VALUES`].
#[derive(Debug, Default)]
struct ResultValues {
    /// The values as written (`14.2`, `heavy showers from 11:00`), for the evidence.
    shown: Vec<String>,
    /// Their words of at least three letters, lower case.
    words: Vec<String>,
    /// Their numbers, and the lengths of the result's lists.
    numbers: Vec<f64>,
    /// The identifiers and codes it returned (lower case): never shown as values, but an answer
    /// that quotes one uses the result.
    codes: Vec<String>,
    /// The statuses it returned ([`status_key`] members whose value is a [`STATUS_WORDS`] entry),
    /// as `(key, canonical status)`.
    statuses: Vec<(String, &'static str)>,
}

impl ResultValues {
    fn walk(&mut self, v: &Value, key: &str, known: &str) {
        if self.shown.len() >= MAX_RESULT_VALUES {
            return;
        }
        match v {
            Value::Array(items) => {
                // A list's length is something the result tells too ("you have four orders").
                self.numbers.push(items.len() as f64);
                items.iter().for_each(|x| self.walk(x, key, known));
            }
            Value::Object(map) => map.iter().for_each(|(k, x)| self.walk(x, k, known)),
            Value::String(s) if let Some(status) = status_of(s).filter(|_| status_key(key)) => {
                self.statuses.push((key.to_string(), status));
                if !known.contains(&s.trim().to_lowercase()) {
                    self.shown.push(format!("\"{}\"", s.trim()));
                    self.words.extend(
                        s.to_lowercase()
                            .split(|c: char| !c.is_alphabetic())
                            .filter(|w| w.len() >= 3)
                            .map(str::to_string),
                    );
                }
            }
            Value::String(s) if is_id_key(key) => {
                let low = s.trim().to_lowercase();
                if low.len() >= 4 && !known.contains(&low) {
                    self.codes.push(low);
                }
            }
            _ if is_id_key(key) => {}
            Value::String(s) => {
                let s = s.trim();
                let low = s.to_lowercase();
                // An identifier or a code (one token with a digit that is not a number) is no
                // value told to a user.
                let code = !s.contains(char::is_whitespace)
                    && s.chars().any(|c| c.is_ascii_digit())
                    && s.replace(',', "").parse::<f64>().is_err();
                if code && s.len() >= 4 && !known.contains(&low) {
                    self.codes.push(low);
                    return;
                }
                if s.is_empty() || s.len() > 120 || code || known.contains(&low) {
                    return;
                }
                let words: Vec<String> = low
                    .split(|c: char| !c.is_alphabetic())
                    .filter(|w| w.chars().count() >= 3 && !known.contains(*w))
                    .map(str::to_string)
                    .collect();
                let numbers = numbers_in(s);
                if words.is_empty() && numbers.is_empty() {
                    return;
                }
                self.shown.push(format!("\"{s}\""));
                self.words.extend(words);
                self.numbers.extend(numbers.into_iter().map(|(x, _)| x));
            }
            Value::Number(n) => {
                let text = n.to_string();
                // Zero is told in words ("no rain", "nothing left").
                if known.contains(&text) || n.as_f64() == Some(0.0) {
                    return;
                }
                if let Some(x) = n.as_f64() {
                    self.shown.push(text);
                    self.numbers.push(x);
                }
            }
            _ => {}
        }
    }
}

/// Statuses a record can hold, each with the words that write it (the first is the canonical
/// name): an order's, a flight's, a booking's, a ticket's, a payment's, a stock's.
const STATUS_WORDS: [&[&str]; 24] = [
    &["pending"],
    &["processing", "being processed", "in progress"],
    &["processed"],
    &["shipped", "in transit", "on its way", "out for delivery"],
    &["delivered"],
    &["delayed", "late", "behind schedule"],
    &["on time", "on schedule", "on-time"],
    &["cancelled", "canceled"],
    &["returned"],
    &["refunded"],
    &["active"],
    &["inactive", "deactivated"],
    &["suspended"],
    &["expired"],
    &["closed"],
    &["open"],
    &["completed", "complete"],
    &["failed"],
    &["approved"],
    &["rejected", "denied", "declined"],
    &["confirmed"],
    &["unavailable", "sold out", "out of stock"],
    &["available", "in stock"],
    &["unpaid", "overdue"],
];

/// Whether a JSON member names a status: `status`, `state`, or a name ending in `_status`
/// (`order_status`, `flightStatus`).
fn status_key(key: &str) -> bool {
    let low = key.to_ascii_lowercase();
    low == "status" || low == "state" || low.ends_with("_status") || low.ends_with("status") && key.ends_with("Status")
}

/// The canonical status a value writes (`"Delayed"`, `"on_time"`, `"in transit"`), if it is one
/// of [`STATUS_WORDS`] as a whole.
fn status_of(value: &str) -> Option<&'static str> {
    let v = value.trim().to_lowercase().replace(['_', '-'], " ");
    STATUS_WORDS.iter().find(|ws| ws.iter().any(|w| w.replace('-', " ") == v)).map(|ws| ws[0])
}

/// The statuses a message tells: a [`STATUS_WORDS`] phrase right after "is", "are", "was",
/// "were", "has been", "have been" or "status:" (a few words such as "still", "currently", "now"
/// between), and not negated ("is not delayed"). Lower-case `text`; `(phrase as written,
/// canonical name)`, in order.
fn told_statuses(text: &str) -> Vec<(&str, &'static str)> {
    static TOLD: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        let mut phrases: Vec<String> = STATUS_WORDS.iter().flat_map(|ws| ws.iter().map(|w| regex::escape(w))).collect();
        phrases.sort_by_key(|p| std::cmp::Reverse(p.len()));
        regex::Regex::new(&format!(
            r"\b(?:is|are|was|were|has been|have been|status(?: is)?:?)\s+(?:(?:still|currently|now|already|running|fully)\s+)*({})\b",
            phrases.join("|")
        ))
        .unwrap()
    });
    TOLD.captures_iter(text)
        .filter_map(|c| c.get(1))
        .filter_map(|m| status_of(m.as_str()).map(|s| (m.as_str(), s)))
        .collect()
}

/// The numbers written in `s` (thousands separators dropped), each with its count of decimals,
/// then the number words two to twelve of [`NUMBER_WORDS`] (as whole numbers).
fn numbers_in(s: &str) -> Vec<(f64, i32)> {
    let words = s
        .split(|c: char| !c.is_alphabetic())
        .filter_map(|w| NUMBER_WORDS.iter().position(|n| n.eq_ignore_ascii_case(w)))
        .map(|k| ((k + 2) as f64, 0));
    let mut out: Vec<(f64, i32)> = s
        .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
        .map(|t| t.trim_matches(|c| c == '.' || c == ','))
        .filter(|t| t.chars().any(|c| c.is_ascii_digit()))
        .filter_map(|t| {
            let t = t.replace(',', "");
            let decimals = t.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
            t.parse::<f64>().ok().map(|x| (x, decimals))
        })
        .collect();
    out.extend(words);
    out
}

/// Whether an answer's words take up a word of a result: the same word, or, for words of five
/// letters or more, the same first five letters (`showers` and `shower`, `cancelled` and
/// `canceled`).
fn takes_word(answer: &HashSet<String>, w: &str) -> bool {
    answer.contains(w)
        || w.len() >= 5 && answer.iter().any(|a| a.len() >= 5 && a.get(..5).is_some_and(|p| w.get(..5) == Some(p)))
}

/// Words of a JSON member's name that make it the time something happens or will be ready
/// (`estimated_ready`, `eta`, `expectedDelivery`, `pickup_date`, `due_at`).
const TIME_KEY_WORDS: [&str; 13] = [
    "eta",
    "estimated",
    "expected",
    "ready",
    "arrival",
    "arrives",
    "delivery",
    "pickup",
    "due",
    "date",
    "time",
    "when",
    "until",
];

/// Whether a JSON member's name is a time ([`TIME_KEY_WORDS`], split at `_`, `-` and case changes).
fn time_key(key: &str) -> bool {
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    for ch in key.chars() {
        if ch == '_' || ch == '-' || ch == '.' || ch.is_uppercase() && !cur.is_empty() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            if ch == '_' || ch == '-' || ch == '.' {
                continue;
            }
        }
        cur.extend(ch.to_lowercase());
    }
    words.push(cur);
    words.iter().any(|w| TIME_KEY_WORDS.contains(&w.as_str()))
}

/// The members of `v` (at any depth) whose name is a time ([`time_key`]) and whose value is
/// empty: `null`, `""`, "unknown", "TBD", "n/a", "none". `(name, value as written)`.
fn empty_times(v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let empty = match x {
                    Value::Null => true,
                    Value::String(s) => {
                        matches!(
                            s.trim().to_ascii_lowercase().as_str(),
                            "" | "unknown" | "tbd" | "n/a" | "none" | "pending"
                        )
                    }
                    _ => false,
                };
                if empty && time_key(k) {
                    out.push((k.clone(), x.to_string()));
                } else {
                    empty_times(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| empty_times(x, out)),
        _ => {}
    }
}

/// Whether `v` (at any depth) gives a time member ([`time_key`]) a value that is not empty: the
/// message may tell that one.
fn gives_time(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, x)| {
            let empty = x.is_null()
                || x.as_str().is_some_and(|s| {
                    matches!(
                        s.trim().to_ascii_lowercase().as_str(),
                        "" | "unknown" | "tbd" | "n/a" | "none" | "pending"
                    )
                });
            time_key(k) && !empty && !x.is_object() && !x.is_array() || gives_time(x)
        }),
        Value::Array(a) => a.iter().any(gives_time),
        _ => false,
    }
}

/// When something will happen, as a message tells it: a day ("tomorrow", "today", "on
/// Wednesday", "next week"), a date ("2 December", "Dec 2"), a delay ("within 2 days", "in 3
/// hours") or a deadline ("by 5 pm").
static TIME_TOLD: LazyLock<regex::Regex> = LazyLock::new(|| {
    let months = "jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?";
    regex::Regex::new(&format!(
        r"(?i)\b(tomorrow|today|tonight|this (?:morning|afternoon|evening|week)|next (?:week|month)|(?:on|by|until) (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|(?:within|in) (?:\d+|a|an|one|two|three) (?:hours?|days?|business days?|minutes?|weeks?)|by \d{{1,2}}(?::\d{{2}})?\s*(?:am|pm)|\d{{1,2}} (?:{months})\b|(?:{months}) \d{{1,2}}\b)"
    ))
    .unwrap()
});

/// A message that owns up to not knowing when ("no estimated date yet", "can't say when").
static TIME_UNKNOWN: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)\b(no (?:eta|estimate|estimated|expected|date|time)|not (?:yet )?(?:known|scheduled|confirmed|sure)|(?:can't|cannot|can not|couldn't|don't|do not) (?:say|tell|give|know|promise|guarantee)|unknown|no way to know|depends on)\b").unwrap()
});

/// Step `i`, an agent's message that ends its turn (the next step, thoughts aside, is the user's,
/// or there is none), tells the user when something will happen ([`TIME_TOLD`]: "tomorrow", "on
/// Wednesday", "within 2 days") while a lookup's result since the user's last turn (within
/// [`MAX_LOOKUPS`] steps) left that time empty (`"estimated_ready": null`, `"eta": "unknown"`:
/// [`empty_times`]) and no result of the turn gives any time ([`gives_time`]); a message that owns up to not knowing
/// ([`TIME_UNKNOWN`]) is not read. What it promises does not come from the tool. docs/METHODS.md,
/// "Grounding".
pub(super) fn promised_time(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind != StepKind::Message || !agent_step(t, i) {
        return;
    }
    let Some(told) = TIME_TOLD.find(&step.content) else { return };
    if TIME_UNKNOWN.is_match(&step.content) {
        return;
    }
    let next = t.steps[i + 1..].iter().find(|s| s.kind != StepKind::Thought);
    if next.is_some_and(|s| !is_outside_agent(&s.agent) && !is_outside_agent(&s.role)) {
        return;
    }
    let last_user = records(ctx).last_outside.get(i).copied().flatten();
    let from = last_user.map_or(0, |u| u + 1).max(i.saturating_sub(MAX_LOOKUPS));
    let results: Vec<(usize, Value)> = (from..i)
        .filter(|&j| t.steps[j].kind == StepKind::ToolResult && !t.steps[j].is_error)
        .filter_map(|j| Some((j, json_of(&t.steps[j].content)?)))
        .collect();
    // A result of the turn that gives some time: the message may tell that one.
    if results.iter().any(|(_, v)| gives_time(v)) {
        return;
    }
    for (j, v) in results.iter().rev() {
        let mut empty = Vec::new();
        empty_times(v, &mut empty);
        let Some((key, value)) = empty.into_iter().next() else {
            continue;
        };
        out.push(finding(
            Signal::IgnoredResult,
            weights::MISREAD,
            prose![
                format!(
                    "tells the user \"{}\" (\"{}\") but the tool result at step ",
                    crate::text::first_line(&step.content, 60),
                    told.as_str()
                ),
                Part::Step(*j),
                format!(" gives \"{key}\": {value}")
            ],
        ));
        return;
    }
}

/// Step `i` tells the user an answer right after a lookup's result without using anything the
/// result returned: an agent's message that ends its turn (the next step, thoughts aside, is the
/// user's, or there is none), is not a question and tells no count of a list, and follows (thoughts aside) the JSON result of
/// a call that does not change state; the result holds values the caller did not already know
/// (not in the call, the task or the user's last turn: [`ResultValues`]), and the message states
/// none of them nor any value of another lookup's result since the user's last turn (within
/// [`MAX_LOOKUPS`] steps), in words or in numbers (a number rounded to the precision the message writes
/// counts). What it tells the user then does not come from what the tool returned: a misread
/// result ("dry and sunny" after `"summary": "heavy showers"`). A result with an error, a plain
/// text result and a confirmation after a state change are not tested. docs/METHODS.md,
/// "Grounding".
pub(super) fn ignored_result(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind != StepKind::Message || !agent_step(t, i) {
        return;
    }
    let text = step.content.trim();
    // A question tells nothing.
    if text.ends_with('?') || text.split_whitespace().count() < 3 {
        return;
    }
    let Some(r) = (0..i).rev().find(|&j| t.steps[j].kind != StepKind::Thought) else { return };
    if t.steps[r].kind != StepKind::ToolResult || t.steps[r].is_error || ctx.hierarchy.steps[r].flags.error {
        return;
    }
    let Some(call) = super::links(ctx).produced_by.get(r).copied().flatten() else { return };
    if super::changes_state(t, call) {
        return;
    }
    let next = t.steps[i + 1..].iter().find(|s| s.kind != StepKind::Thought);
    if next.is_some_and(|s| !is_outside_agent(&s.agent) && !is_outside_agent(&s.role)) {
        return;
    }
    let last_user = records(ctx).last_outside.get(i).copied().flatten();
    let user = last_user.map_or("", |u| super::lower_of(ctx, u));
    let task = t.task.to_lowercase();
    // The values of the last result (for the evidence), then of every other lookup's result
    // since the user's last turn: an answer may come from an earlier lookup of the same turn.
    let mut own = ResultValues::default();
    let mut earlier = ResultValues::default();
    // At most the last [`MAX_LOOKUPS`] steps of the turn: a long run without user turns is not
    // walked back to its start for every message.
    for j in (last_user.map_or(0, |u| u + 1).max((r + 1).saturating_sub(MAX_LOOKUPS))..=r).rev() {
        let s = &t.steps[j];
        if s.kind != StepKind::ToolResult || s.is_error || ctx.hierarchy.steps[j].flags.error {
            continue;
        }
        let Some(c) = super::links(ctx).produced_by.get(j).copied().flatten() else { continue };
        if super::changes_state(t, c) {
            continue;
        }
        let Some(value) = json_of(&s.content) else { continue };
        let known = format!("{}\n{task}\n{user}", super::lower_of(ctx, c));
        if j == r { own.walk(&value, "", &known) } else { earlier.walk(&value, "", &known) }
    }
    if own.shown.is_empty() {
        return;
    }
    let words = super::words_of(ctx, i);
    let told = numbers_in(text);
    // A figure told to its written precision; a loss told without its sign ("lost $18,342.62" for
    // -18342.61789); a fraction told as a percentage ("12.34%" for 0.12343).
    let near = |v: f64| told.iter().any(|&(a, d)| (a - v).abs() <= 0.5 * 10f64.powi(-d) + 1e-9);
    let close = |v: f64| near(v) || v < 0.0 && near(-v) || v.abs() < 1.0 && v != 0.0 && near(v.abs() * 100.0);
    let low = super::lower_of(ctx, i);
    let uses = |v: &ResultValues| {
        v.words.iter().any(|w| takes_word(words, w))
            || v.numbers.iter().any(|&x| close(x))
            || v.codes.iter().any(|c| low.contains(c.as_str()))
    };
    // A status the message tells that no result of the turn holds, while the last one holds
    // another ("on schedule" after `"status": "delayed"`), even when it reuses other values.
    if let Some((key, status)) = own.statuses.first() {
        let held: Vec<&str> = own.statuses.iter().chain(&earlier.statuses).map(|(_, s)| *s).collect();
        let told = told_statuses(low);
        if let Some((other, _)) = told.iter().find(|(_, x)| !held.contains(x))
            && !told.iter().any(|(_, x)| held.contains(x))
        {
            out.push(finding(
                Signal::IgnoredResult,
                weights::MISREAD,
                prose![
                    format!(
                        "tells the user \"{}\" (\"{other}\") but the tool result at step ",
                        crate::text::first_line(text, 60)
                    ),
                    Part::Step(r),
                    format!(" says \"{key}\": \"{status}\"")
                ],
            ));
            return;
        }
    }
    // A count of a list is checked against it ([`count_mismatch`]).
    if uses(&own) || uses(&earlier) || !counts(text).is_empty() {
        return;
    }
    let shown: Vec<&str> = own.shown.iter().take(3).map(String::as_str).collect();
    out.push(finding(
        Signal::IgnoredResult,
        weights::MISREAD,
        prose![
            format!("tells the user \"{}\" right after the tool result at step ", crate::text::first_line(text, 60)),
            Part::Step(r),
            format!(" and uses none of the values it returned ({})", shown.join(", "))
        ],
    ));
}

// ---------------------------------------------------------------------------------------------
// A date read off the neighbouring entry
// ---------------------------------------------------------------------------------------------

/// How many steps back [`neighbouring_date`] looks for the observation a date was read from.
const NEIGHBOUR_LOOKBACK: usize = 12;

/// How far after a key (in bytes) its date may stand in an observation ("2.31.0\nMay 22, 2023",
/// "| 2.31.0 | May 22, 2023 |").
const KEY_TO_DATE: usize = 60;

/// Step `i`, an agent's statement of a date for a key ("version 2.31.0 with the date May 3,
/// 2023"), where an observation of the last [`NEIGHBOUR_LOOKBACK`] steps (a tool result or a
/// browsing agent's page) lists the key with another date right after it ("2.31.0\nMay 22,
/// 2023") and the stated date after another key ("2.30.0\nMay 3, 2023"): the date of the
/// neighbouring entry was read. A key is a word of the sentence that states the date, with a
/// digit or a capital letter and three characters or more, that the observation writes as a
/// word of its own; the date that goes with it is the first date within [`KEY_TO_DATE`] bytes
/// after it. Any word of the sentence followed by the stated date in the observation clears it
/// ("2.31.0: 2023-05-22, a week after 2.30.0" reads 2.31.0's date right).
pub(super) fn neighbouring_date(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if !matches!(step.kind, StepKind::Message) || is_outside_agent(&step.agent) || super::is_agent_output(ctx, i) {
        return;
    }
    let ev = &ctx.hierarchy.evidence[i];
    let dates: Vec<&crate::evidence::Evidence> =
        ev.iter().filter(|e| e.kind == crate::evidence::EvidenceKind::Date && e.context.is_none()).collect();
    if dates.is_empty() {
        return;
    }
    let text = &step.content;
    let observations: Vec<usize> = (i.saturating_sub(NEIGHBOUR_LOOKBACK)..i)
        .rev()
        .filter(|&j| t.steps[j].kind == StepKind::ToolResult || super::is_agent_output(ctx, j))
        .collect();
    for d in dates {
        // The sentence around the date, and its key-like words.
        // A dot inside `2.31.0` ends no sentence: only one before a space or a line break does.
        let before = &text[..d.span.start];
        let start = [". ", ".\n", "? ", "! ", "\n"]
            .iter()
            .filter_map(|b| before.rfind(b).map(|p| p + b.len()))
            .max()
            .unwrap_or(0);
        let rest = &text[d.span.end..];
        let end = [". ", ".\n", "? ", "! ", "\n"]
            .iter()
            .filter_map(|b| rest.find(b))
            .min()
            .map_or(text.len(), |p| d.span.end + p);
        let sentence = &text[start..end];
        let own = d.text(text);
        // Nearest to the date first: "version 2.31.0 with the date May 3, 2023, below the 2.32.0
        // entry" states the date for 2.31.0.
        let at = d.span.start - start;
        let mut keys: Vec<(usize, &str)> = sentence
            .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '\'' | '"' | '`' | ':'))
            .map(|w| w.trim_end_matches('.'))
            .filter(|w| w.chars().count() >= 3 && !own.contains(*w))
            .filter(|w| w.chars().any(|c| c.is_ascii_digit() || c.is_uppercase()))
            .filter(|w| crate::evidence::date_key(w).is_none())
            .map(|w| {
                let p = w.as_ptr() as usize - sentence.as_ptr() as usize;
                (p.abs_diff(at), w)
            })
            .collect();
        keys.sort();
        let keys: Vec<&str> = keys.into_iter().map(|(_, w)| w).collect();
        for &o in &observations {
            let page = &t.steps[o].content;
            let page_dates: Vec<&crate::evidence::Evidence> =
                ctx.hierarchy.evidence[o].iter().filter(|e| e.kind == crate::evidence::EvidenceKind::Date).collect();
            if !page_dates.iter().any(|e| e.key == d.key) {
                continue;
            }
            // The date that goes with each occurrence of a word: in a table row (a line with
            // cells split by `|`, tabs or wide gaps) the dates of that row, whichever column
            // comes first; else the date right after it.
            let after = |w: &str| -> Vec<&crate::evidence::Evidence> {
                word_positions(page, w)
                    .flat_map(|p| {
                        let line = line_around(page, p);
                        let cells = &page[line.clone()];
                        let is_row = cells.contains('|') || cells.contains('\t') || cells.trim().contains("  ");
                        let row: Vec<&crate::evidence::Evidence> =
                            page_dates.iter().copied().filter(|e| is_row && line.contains(&e.span.start)).collect();
                        if !row.is_empty() {
                            return row;
                        }
                        let from = p + w.len();
                        page_dates
                            .iter()
                            .copied()
                            .find(|e| e.span.start >= from && e.span.start <= from + KEY_TO_DATE)
                            .into_iter()
                            .collect()
                    })
                    .collect()
            };
            // Some word of the sentence goes with the stated date: it was read right.
            if keys.iter().any(|k| after(k).iter().any(|e| e.key == d.key)) {
                continue;
            }
            for &k in &keys {
                let theirs = after(k);
                if theirs.is_empty() || theirs.iter().any(|e| e.key == d.key) {
                    continue;
                }
                let other = theirs[0];
                // The stated date goes with another entry of the page: the text before it on its
                // line (after a cell's bar), else, when the date opens its line or row, that row.
                let Some(owner) = page_dates.iter().find(|e| e.key == d.key).and_then(|e| {
                    let before = page[..e.span.start].trim_end().rsplit(['\n', '|']).next().unwrap_or("").trim();
                    if !before.is_empty() {
                        return Some(crate::text::clip(before, 30));
                    }
                    let row = page[line_around(page, e.span.start)].trim();
                    (!row.is_empty()).then(|| format!("the row \"{}\"", crate::text::clip(row, 60)))
                }) else {
                    continue;
                };
                out.push(finding(
                    Signal::IgnoredResult,
                    weights::MISREAD,
                    prose![
                        format!("states {own} for {k}, but step "),
                        Part::Step(o),
                        format!(" lists {k} with {}; {own} goes with {owner}", other.text(page)),
                    ],
                ));
                return;
            }
        }
    }
}

/// The byte range of the line of `text` that holds byte `p`, without its line break.
fn line_around(text: &str, p: usize) -> std::ops::Range<usize> {
    let start = text[..p].rfind('\n').map_or(0, |x| x + 1);
    let end = text[p..].find('\n').map_or(text.len(), |x| p + x);
    start..end
}

/// The byte positions where `w` stands in `text` as a word of its own (no letter, digit, `.`
/// or `-` joined to it on either side: `2.31.0` is not inside `12.31.05`).
fn word_positions<'a>(text: &'a str, w: &'a str) -> impl Iterator<Item = usize> + 'a {
    let joined = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_'));
    text.match_indices(w).map(|(p, _)| p).filter(move |&p| {
        let before = text[..p].chars().next_back();
        let after_text = &text[p + w.len()..];
        let mut after = after_text.chars();
        let next = after.next();
        // A sentence's full stop after the word is no joining dot.
        let next = if next == Some('.') && after.next().is_none_or(char::is_whitespace) { None } else { next };
        !joined(before) && !joined(next)
    })
}

/// How many steps back [`told_not_applied`] reads for a result that says nothing was done.
const NOT_APPLIED_WINDOW: usize = 12;

/// A member of a tool's result that says the change was not made: a dry run or a preview
/// (`"dry_run": true`), or a change not applied, committed or saved (`"applied": false`).
static NOT_APPLIED: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r#""(?:dry_?run|dryRun|dry-run|preview|simulated?|validate_?only|validateOnly)"\s*:\s*true\b|"(?:applied|committed|executed|persisted|saved|performed|written)"\s*:\s*false\b"#,
    )
    .unwrap()
});

/// A member of a tool's result that says its data is not live: `"live": false` (`"fresh"`,
/// `"up_to_date"`), `"cached": true` (`"cache_hit"`, `"stale"`, `"needs_refresh"`), a `"source":
/// "cache"`, or the time or age of a cached copy (`"cached_at"`, `"cache_age_s"`,
/// `"stale_since"`).
static NOT_LIVE: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r#""(?:live|is_live|realtime|real_time|fresh|is_fresh|up_to_date)"\s*:\s*false\b|"(?:cached|is_cached|from_cache|cache_hit|stale|is_stale|needs_refresh)"\s*:\s*true\b|"(?:source|data_source)"\s*:\s*"(?:cache|cached|snapshot)"|"(?:cached_at|stale_since|cache_age\w*)"\s*:\s*(?:"[^"]|[1-9]|0\.)"#,
    )
    .unwrap()
});

/// A message that tells the user a change was made ("has been updated", "I've cancelled it",
/// "was successfully applied").
pub(super) static CHANGE_MADE: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)\b(?:(?:has|have) been|was|were|is now|are now|i(?:'ve|’ve| have))\s+(?:now\s+)?(?:successfully\s+)?(?:updated|changed|applied|cancel+ed|booked|created|deleted|removed|saved|committed|made|processed|moved|sent|scheduled|refunded|set|upgraded|downgraded|transferred|migrated|renamed|enabled|disabled|reset|switched|activated|placed|submitted|approved|paid)\b").unwrap()
});

/// A message that says the change was only tried or shown: a dry run, a preview, nothing changed.
static OWNS_NOT_APPLIED: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)dry[- ]?run|\bpreview|\bsimulat|\bnot (?:yet )?(?:been )?(?:applied|made|committed|saved|changed|executed)\b|\bnothing (?:was|has been|is) (?:changed|applied)|\bno changes? (?:was|were|has been|have been) (?:made|applied)|\bwould (?:be|have)\b").unwrap()
});

/// A message that tells data as current ("currently", "right now", "live", "up to date"), or
/// stock as there now ("in stock", "on hand", "available now", a number of things "available",
/// "left" or "remaining" at the end of its phrase: "40 units available", "3 seats left at LDS",
/// not "3 remaining steps"; a label "Available: 40"; "can ship today", "can be fulfilled today").
/// Read on the text without markdown emphasis
/// ([`plain`]: "**40 units** available").
static TOLD_CURRENT: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(concat!(
        r"(?i)\b(?:currently|right now|at the moment|as of now|live|real[- ]time|up[- ]to[- ]date|in stock|on hand|available (?:now|today)|still (?:available|in stock|open))\b",
        r"|(?:^|[^\w.,])\d[\d,]*(?:[ \t]+[a-z][a-z-]*){0,2}[ \t]+(?:available|left|remaining)(?:[ \t]*(?:[.,;:!?)]|$)|[ \t]+(?:in|at|for|on|of|to|today|now|and|but|so|with|from)\b)",
        r"|(?m)^[ \t]*(?:[-*•][ \t]*)?(?:available|in stock|on hand|stock)[ \t]*:[ \t]*\d",
        r"|\bcan (?:be )?(?:ship(?:ped)?|fulfil+ed|deliver(?:ed)?|dispatch(?:ed)?|picked) (?:out )?today\b",
    ))
    .unwrap()
});

/// A message that says the data is not live: from a cache, as of a time, possibly out of date,
/// days old, the last sync or count, to be counted or checked again.
static OWNS_NOT_LIVE: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(concat!(
        r"(?i)\bcached?\b|\bas of\b|\bout of date\b|\boutdated\b|\bstale\b|\bnot live\b|\blast (?:updated|synced|checked|refreshed)\b|\bsnapshot\b|\bnot (?:in )?real[- ]time\b|\bnot (?:be )?up[- ]to[- ]date\b|\bmay have changed\b",
        r"|\b(?:\d+|a few|few|several|two|three|four|five|six|seven)\s+(?:days?|hours?|weeks?)\s+old\b",
        r"|\b(?:last|latest|previous|most recent)\s+(?:\w+\s+)?(?:sync|count|update|refresh|check|snapshot)\b",
        r"|\bre-?count|\brefresh|\bre-?check|\blive count\b",
    ))
    .unwrap()
});

/// `text` without markdown emphasis (`**`, `__`, `` ` ``), for the phrases above.
fn plain(text: &str) -> String {
    text.replace("**", "").replace("__", "").replace('`', "")
}

/// An agent's message that tells the user what a tool's result says did not happen: a change
/// made when the result of the call (within [`NOT_APPLIED_WINDOW`] steps, since the user's last
/// turn) says it was a dry run or not applied (`"dry_run": true`, `"applied": false`), with no
/// later call of the same tool that made it; or data told as current when the result says it is
/// not live (`"live": false`, `"cached": true` with its `as_of`). The message that says so ("this
/// was a dry run", "from the cache, as of 09:00") tells it right.
pub(super) fn told_not_applied(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind != StepKind::Message || !agent_step(t, i) {
        return;
    }
    let plain_text = plain(&step.content);
    let text = &plain_text;
    let change = CHANGE_MADE.is_match(text) && !OWNS_NOT_APPLIED.is_match(text);
    let mut current = TOLD_CURRENT.is_match(text) && !OWNS_NOT_LIVE.is_match(text);
    // The sentences that tell data as current.
    // The sentences that tell data as current, each with the one before it ("LDS has 40 units;
    // it can ship today": the clause after a semicolon is a sentence of its own).
    let all: Vec<&str> = crate::text::sentences(text).collect();
    let told: String = (0..all.len())
        .filter(|&k| TOLD_CURRENT.is_match(all[k]))
        .flat_map(|k| all[k.saturating_sub(1)..=k].iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    if !change && !current {
        return;
    }
    let last_user = records(ctx).last_outside.get(i).copied().flatten();
    let from = last_user.map_or(0, |u| u + 1).max(i.saturating_sub(NOT_APPLIED_WINDOW));
    let links = super::links(ctx);
    let tool_of = |r: usize| links.produced_by.get(r).copied().flatten().and_then(|c| t.steps[c].tool_name.clone());
    for r in (from..i).rev() {
        if t.steps[r].kind != StepKind::ToolResult {
            continue;
        }
        let content = &t.steps[r].content;
        if change && let Some(m) = NOT_APPLIED.find(content) {
            let tool = tool_of(r);
            // A later call of the same tool whose result says nothing of the kind made it.
            let made_later = (r + 1..i).any(|k| {
                t.steps[k].kind == StepKind::ToolResult
                    && tool_of(k) == tool
                    && !NOT_APPLIED.is_match(&t.steps[k].content)
            });
            if !made_later {
                out.push(finding(
                    Signal::IgnoredResult,
                    weights::MISREAD,
                    prose![
                        "tells the user the change was made, but its result at step ",
                        Part::Step(r),
                        format!(" says `{}`: nothing was changed", m.as_str())
                    ],
                ));
                return;
            }
        }
        // The data told as current rests on the latest result that shares a value with the
        // sentence telling it: a live result of another lookup (the stock) is not convicted by a
        // cached one (the opening hours).
        if current && shares_value(content, &told) {
            let Some(m) = NOT_LIVE.find(content) else {
                current = false;
                continue;
            };
            out.push(finding(
                Signal::IgnoredResult,
                weights::MISREAD,
                prose![
                    "tells the data as current, but its result at step ",
                    Part::Step(r),
                    format!(" says `{}`", m.as_str())
                ],
            ));
            return;
        }
    }
}

/// Whether a tool output shares a value with `sentence`: one of its JSON string values or
/// numbers (or, for text, its words), a word of five letters or more or a token with a digit,
/// written in the sentence as a word of its own, case aside ("operational" of `"status":
/// "operational"`, the `3` of `"units": 3`).
fn shares_value(output: &str, sentence: &str) -> bool {
    let mut texts = Vec::new();
    match json_of(output) {
        Some(v) => {
            let mut leaves = Vec::new();
            super::json_leaves(&v, &mut leaves);
            texts.extend(leaves.into_iter().map(|l| match l {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }));
        }
        None => texts.push(output.to_string()),
    }
    let words: HashSet<String> = sentence
        .split(|c: char| !c.is_alphanumeric() && c != '.' && c != ':')
        .map(|w| w.trim_matches(['.', ':']).to_lowercase())
        .filter(|w| !w.is_empty())
        .collect();
    texts.iter().flat_map(|t| t.split(|c: char| !c.is_alphanumeric() && c != '.' && c != ':')).any(|w| {
        let w = w.trim_matches(['.', ':']).to_lowercase();
        (w.chars().count() >= 5 || w.chars().any(|c| c.is_ascii_digit())) && words.contains(&w)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_count_told_as_a_part_is_found_in_its_sentence() {
        let told = |text: &str| {
            let c = &counts(text)[0];
            told_partial(text, &c.at)
        };
        assert!(told("The first page lists 4 orders; there are more."));
        assert!(told("You have at least 25 open tickets."));
        assert!(told("Showing 25 tickets (more pages remain)."));
        assert!(!told("There are 25 open P1 tickets in the payments queue."));
        assert!(!told("I checked the first queue. There are 25 open tickets."), "another sentence's word");
    }

    #[test]
    fn paging_told_in_words_is_read_and_a_whole_list_is_not_a_page() {
        let said = |t: &str| prose_paging(t);
        assert_eq!(said("Showing 25 of 112 tickets."), Some("Showing 25 of 112".into()));
        assert_eq!(said("Results 1-25 of 1,203"), Some("Results 1-25 of 1,203".into()));
        assert_eq!(said("page 1 of 5"), Some("page 1 of 5".into()));
        assert_eq!(said("More results are available: use page=2."), Some("More results are available".into()));
        assert_eq!(said("Pass cursor=c_25 to continue"), Some("Pass cursor=c_25".into()));
        assert_eq!(said("Output truncated at 50 rows"), Some("Output truncated".into()));
        // The whole list, a last page, a part told by a noun without a range: no paging.
        assert_eq!(said("Showing 12 of 12 tickets."), None);
        assert_eq!(said("page 5 of 5"), None);
        assert_eq!(said("items 3 of 5 shipped on Monday"), None);
        assert_eq!(said("All 12 tickets listed."), None);
        // A note after the data: the JSON and the text apart.
        let (v, rest) = json_then_text("[{\"id\": \"T-1\"}]\nShowing 1 of 3 tickets.").unwrap();
        assert!(v.is_array());
        assert_eq!(rest.trim(), "Showing 1 of 3 tickets.");
        assert!(json_then_text("Found [1] match").is_none());
        assert!(json_then_text("{\"a\": 1}").is_none());
        // A text member of the object holding the list.
        let more = paging_of(json!({"tickets": [], "note": "Showing 25 of 40; use page=2"}).as_object().unwrap());
        assert_eq!(more.as_deref(), Some("note: \"Showing 25 of 40\""));
    }

    #[test]
    fn a_list_is_one_page_when_its_holder_or_paging_member_says_so() {
        let more = |v: serde_json::Value| paging_of(v.as_object().unwrap());
        assert_eq!(more(json!({"data": [], "has_more": true})).as_deref(), Some("has_more: true"));
        assert_eq!(
            more(json!({"messages": [], "response_metadata": {"next_cursor": "dGVhbTpD"}})).as_deref(),
            Some("response_metadata.next_cursor: \"dGVhbTpD\"")
        );
        assert_eq!(
            more(json!({"nodes": [], "pageInfo": {"hasNextPage": true, "endCursor": "Y3Vy"}})).as_deref(),
            Some("pageInfo.hasNextPage: true")
        );
        assert_eq!(more(json!({"items": [], "page": 1, "total_pages": 5})).as_deref(), Some("page 1 of 5"));
        assert_eq!(more(json!({"items": [], "page": 0, "total_pages": 2})).as_deref(), Some("page 0 of 2"));
        for whole in [
            json!({"data": [], "has_more": false}),
            json!({"messages": [], "response_metadata": {"next_cursor": ""}}),
            json!({"items": [], "next": null}),
            json!({"items": [], "page": 5, "total_pages": 5}),
            json!({"items": [], "page": 0, "total_pages": 1}),
            json!({"items": [], "cached_at": null}),
        ] {
            assert_eq!(more(whole.clone()), None, "{whole}");
        }
    }

    #[test]
    fn counts_are_numbers_before_a_plural_and_not_measures_or_amounts() {
        let c = counts("Currently, there are 11 available T-shirt options in our store.");
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].n, c[0].phrase.clone()), (11, vec!["available".into(), "t-shirt".into(), "options".into()]));
        assert_eq!(counts("You have three pending orders.")[0].n, 3);
        assert!(counts("Refunds take 5 business days; the 500 pieces puzzle costs $53 dollars.").is_empty());
        assert!(counts("Order #W123 4 items").iter().all(|c| c.n == 4));
        assert!(counts("a refund of $3.76 items").is_empty(), "an amount is no count");
        assert!(counts("You have two orders containing water bottles.").is_empty(), "a selection");
    }

    #[test]
    fn a_count_s_words_may_hold_digits_and_the_values_the_call_asked_for_select_nothing_more() {
        let c = counts("We had **6 SEV2 checkout incidents** last week.");
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].n, c[0].phrase.clone()), (6, vec!["sev2".into(), "checkout".into(), "incidents".into()]));
        let call = r#"{"service": "checkout", "severity": "SEV2", "opened_after": "2026-10-05"}"#;
        let selected = selection_words(call);
        assert_eq!(selected, ["checkout", "sev2", "service", "severity"]);
        let t = crate::model::Trajectory {
            steps: vec![crate::model::Step {
                kind: StepKind::ToolResult,
                content: r#"{"page": 1, "incidents": [{"id": "INC-1", "status": "closed"},
                    {"id": "INC-2", "status": "open"}, {"id": "INC-3", "status": "closed"}], "total": 3}"#
                    .into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let r = index(&t);
        let l = &r.listings[0];
        assert_eq!((l.name.as_str(), l.size, l.total), ("incidents", 3, Some(3)));
        assert!(l.subsets.contains(&("status=closed".into(), 2)));
        assert!(!names(&c[0].phrase, l, &[]), "sev2 is no word of the list");
        assert!(names(&c[0].phrase, l, &selected));
        // A count given beside a list that is one page of it.
        assert_eq!(total_of(serde_json::json!({"count": 120, "items": []}).as_object().unwrap()), Some(120));
        assert_eq!(total_of(serde_json::json!({"page": 2, "items": []}).as_object().unwrap()), None);
    }

    #[test]
    fn stems_drop_plurals() {
        assert_eq!(stem("orders"), "order");
        assert_eq!(stem("boxes"), "box");
        assert_eq!(stem("options"), "option");
        assert_eq!(stem("T-Shirt"), "t-shirt");
    }

    #[test]
    fn lists_their_sizes_and_subsets_and_unavailable_records_are_indexed() {
        let t = crate::model::Trajectory {
            steps: vec![crate::model::Step {
                kind: StepKind::ToolResult,
                tool_name: Some("get_product_details".into()),
                content: r#"{"name": "T-Shirt", "variants": {"111111": {"item_id": "111111", "available": true},
                    "222222": {"item_id": "222222", "available": false}, "333333": {"item_id": "333333", "available": true}}}"#
                    .into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let r = index(&t);
        assert_eq!(r.unavailable, vec![("222222".to_string(), 0, "available".to_string())]);
        assert_eq!(r.elsewhere.get("111111"), Some(&0));
        assert_eq!(r.elsewhere.get("222222"), None);
        let l = &r.listings[0];
        assert_eq!((l.name.as_str(), l.owner.as_deref(), l.size), ("variants", Some("t-shirt"), 3));
        assert!(l.subsets.contains(&("available=true".into(), 2)));
        assert!(names(&["t-shirt".into(), "options".into()], l, &[]));
        assert!(names(&["available".into(), "t-shirt".into(), "options".into()], l, &[]));
        assert!(!names(&["orders".into()], l, &[]));
        // "cheap" is no field or value of the list: the count is of a selection it cannot check.
        assert!(!names(&["cheap".into(), "t-shirt".into(), "options".into()], l, &[]));
        // A lookup named for the selection lists that selection.
        assert!(names(&["cheap".into(), "t-shirt".into(), "options".into()], l, &["get".into(), "cheap".into()]));
    }
}
