//! What `bench` measured and how it is shown: each row has the text of the table and, for most
//! figures, the number itself with its unit (times always in ms). Rows print as the table (the
//! default), as JSON (`--json`, to save a run) or beside a saved run with the ratio of each
//! figure to the saved one (`--compare FILE`).

use std::time::Duration;

use serde_json::{Value, json};

/// One figure of the table.
pub struct Row {
    /// What was measured; rows starting with two spaces belong to the row above.
    pub what: String,
    /// The figure as the table shows it.
    pub shown: String,
    /// The figure as a number, when it is one (`None`: a text such as "3 / true").
    pub value: Option<(f64, &'static str)>,
}

impl Row {
    /// A figure that is only text (several counts, a yes or no).
    pub fn text(what: impl Into<String>, shown: impl Into<String>) -> Row {
        Row {
            what: what.into(),
            shown: shown.into(),
            value: None,
        }
    }

    /// A figure shown as `shown` whose number is `number` `unit`.
    pub fn with(
        what: impl Into<String>,
        shown: impl Into<String>,
        number: f64,
        unit: &'static str,
    ) -> Row {
        Row {
            what: what.into(),
            shown: shown.into(),
            value: Some((number, unit)),
        }
    }

    /// A time shown in ms with one decimal.
    pub fn ms(what: impl Into<String>, elapsed: Duration) -> Row {
        let ms = elapsed.as_secs_f64() * 1000.0;
        Row::with(what, format!("{ms:.1} ms"), ms, "ms")
    }

    /// The mean time of `count` things that took `total`, shown in µs or ms.
    pub fn per(what: impl Into<String>, total: Duration, count: usize) -> Row {
        Row::with(what, per(total, count), per_ms(total, count), "ms")
    }
}

/// `total / count`, shown in µs below a millisecond and in ms above.
pub fn per(total: Duration, count: usize) -> String {
    let micros = per_ms(total, count) * 1000.0;
    if micros >= 1000.0 {
        format!("{:.2} ms", micros / 1000.0)
    } else {
        format!("{micros:.0} µs")
    }
}

/// `total / count`, in ms.
pub fn per_ms(total: Duration, count: usize) -> f64 {
    total.as_secs_f64() * 1000.0 / count.max(1) as f64
}

/// What the run was: the scale, `BENCH_ONLY`, the build.
pub struct RunInfo {
    pub scale: usize,
    pub only: Option<String>,
}

/// The name a row is matched by across runs: its text, after the row it belongs to when it is
/// indented (several rows are called "  one-step run, prompt → runFinished").
fn keys(rows: &[Row]) -> Vec<String> {
    let mut parent = String::new();
    rows.iter()
        .map(|row| match row.what.strip_prefix("  ") {
            Some(sub) => format!("{parent} / {}", sub.trim()),
            None => {
                parent = row.what.trim().to_owned();
                parent.clone()
            }
        })
        .collect()
}

fn header(info: &RunInfo) -> String {
    let build = if cfg!(debug_assertions) {
        "debug build; use the release build"
    } else {
        "release build"
    };
    let only = info
        .only
        .as_deref()
        .map(|only| format!(", BENCH_ONLY={only}"))
        .unwrap_or_default();
    format!(
        "agentd bench (scale {}{only}; mock LLM, {build})",
        info.scale
    )
}

/// The table, as `bench` always printed it.
pub fn print_table(info: &RunInfo, rows: &[Row]) {
    let width = rows.iter().map(|row| row.what.len()).max().unwrap_or(0);
    println!(
        "agentd bench (scale {}; mock LLM, release build recommended)",
        info.scale
    );
    for row in rows {
        println!("  {:width$}  {}", row.what, row.shown);
    }
}

/// The run as JSON: `{scale, only, release, machine, figures: [{figure, shown, value, unit}]}`, with
/// `saved` and `ratio` beside each figure when compared with a saved run.
pub fn to_json(info: &RunInfo, rows: &[Row], saved: Option<&Saved>) -> Value {
    let figures: Vec<Value> = keys(rows)
        .into_iter()
        .zip(rows)
        .map(|(key, row)| {
            let mut figure = json!({
                "figure": key,
                "shown": row.shown,
                "value": row.value.map(|(number, _)| number),
                "unit": row.value.map(|(_, unit)| unit),
            });
            if let Some(saved) = saved {
                let before = saved.value(&key);
                figure["saved"] = json!(before);
                figure["ratio"] = json!(ratio(row.value.map(|(number, _)| number), before));
            }
            figure
        })
        .collect();
    json!({
        "scale": info.scale,
        "only": info.only,
        "release": !cfg!(debug_assertions),
        "machine": machine(),
        "figures": figures,
    })
}

/// The machine the figures are of: its CPU model and how many CPUs this process may use.
fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("model name"))
                .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_owned())
        });
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    json!({"cpu": cpu, "cpus": cpus})
}

/// A run saved with `--json`.
pub struct Saved {
    figures: Vec<(String, Option<f64>, String)>,
    scale: Option<u64>,
}

impl Saved {
    /// Read a file `bench --json` wrote.
    pub fn read(path: &str) -> Result<Saved, String> {
        let text =
            std::fs::read_to_string(path).map_err(|err| format!("cannot read {path}: {err}"))?;
        let json: Value = serde_json::from_str(&text)
            .map_err(|err| format!("{path} is not a saved bench run (bench --json): {err}"))?;
        let figures = json["figures"]
            .as_array()
            .ok_or_else(|| {
                format!("{path} has no `figures`: save a run with `bench --json > FILE`")
            })?
            .iter()
            .map(|figure| {
                (
                    figure["figure"].as_str().unwrap_or_default().to_owned(),
                    figure["value"].as_f64(),
                    figure["shown"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        Ok(Saved {
            figures,
            scale: json["scale"].as_u64(),
        })
    }

    fn find(&self, key: &str) -> Option<&(String, Option<f64>, String)> {
        self.figures.iter().find(|(saved, _, _)| saved == key)
    }

    fn value(&self, key: &str) -> Option<f64> {
        self.find(key).and_then(|(_, value, _)| *value)
    }
}

/// `now / before`, when both are numbers and `before` is not zero.
fn ratio(now: Option<f64>, before: Option<f64>) -> Option<f64> {
    match (now, before) {
        (Some(now), Some(before)) if before != 0.0 => Some(now / before),
        _ => None,
    }
}

/// The table with each figure beside the saved one and their ratio (now / saved: above 1 is
/// more time, memory or count than the saved run), then the saved figures this run lacks.
pub fn print_comparison(info: &RunInfo, rows: &[Row], saved: &Saved, path: &str) {
    println!("{} compared with {path}", header(info));
    if saved.scale.is_some_and(|scale| scale != info.scale as u64) {
        println!(
            "  (the saved run had scale {}: figures that depend on it differ in name and are not compared)",
            saved.scale.unwrap_or_default()
        );
    }
    let keys = keys(rows);
    let lines: Vec<[String; 4]> = keys
        .iter()
        .zip(rows)
        .map(|(key, row)| {
            let (was, versus) = match saved.find(key) {
                None => ("(new)".to_owned(), String::new()),
                Some((_, before, shown)) => {
                    let versus = ratio(row.value.map(|(number, _)| number), *before)
                        .map(|ratio| format!("×{ratio:.2}"))
                        .unwrap_or_default();
                    (format!("was {shown}"), versus)
                }
            };
            [row.what.clone(), row.shown.clone(), was, versus]
        })
        .collect();
    let width = |column: usize| {
        lines
            .iter()
            .map(|line| line[column].chars().count())
            .max()
            .unwrap_or(0)
    };
    let (what, shown, was) = (width(0), width(1), width(2));
    for [what_text, shown_text, was_text, versus] in &lines {
        println!("  {what_text:what$}  {shown_text:shown$}  {was_text:was$}  {versus}");
    }
    for (key, _, shown) in &saved.figures {
        if !keys.contains(key) {
            println!("  (not measured now) {key}: was {shown}");
        }
    }
}
