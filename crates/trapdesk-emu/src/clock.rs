//! `os.date`, `os.time(table)` and `os.difftime` in Rust, as Lua 5.2's `loslib.c` defines them,
//! so that the host's C `os` library (with `execute`, `remove`, `getenv`...) is never opened in
//! an emulated computer. Each answers `true, ...` or `false, message` (the bios raises the
//! message at the caller).

use chrono::format::{Item, StrftimeItems};
use chrono::{DateTime, Datelike, Local, Months, NaiveDate, TimeDelta, TimeZone, Timelike, Utc};
use mlua::{Lua, MultiValue, Table, Value};

fn answer(lua: &Lua, r: Result<Value, String>) -> mlua::Result<MultiValue> {
    Ok(match r {
        Ok(v) => MultiValue::from_vec(vec![Value::Boolean(true), v]),
        Err(m) => MultiValue::from_vec(vec![
            Value::Boolean(false),
            Value::String(lua.create_string(m)?),
        ]),
    })
}

fn now() -> i64 {
    Utc::now().timestamp()
}

/// `os.date([format [, time]])`: "!" first means UTC; "*t" a table; else `strftime`.
fn date(lua: &Lua, format: Option<String>, time: Option<f64>) -> Result<Value, String> {
    let format = format.unwrap_or_else(|| "%c".to_owned());
    let secs = time.map_or_else(now, |t| t.floor() as i64);
    let utc = DateTime::<Utc>::from_timestamp(secs, 0)
        .ok_or("bad argument #2 to 'date' (time out of range)")?;
    let (spec, utc_wanted) = match format.strip_prefix('!') {
        Some(rest) => (rest, true),
        None => (format.as_str(), false),
    };
    if utc_wanted {
        render(lua, spec, utc)
    } else {
        render(lua, spec, utc.with_timezone(&Local))
    }
}

fn render<Tz: TimeZone>(lua: &Lua, spec: &str, t: DateTime<Tz>) -> Result<Value, String>
where
    Tz::Offset: std::fmt::Display,
{
    let err = |e: mlua::Error| e.to_string();
    if spec.starts_with("*t") {
        let table = lua.create_table().map_err(err)?;
        let fields: [(&str, i64); 8] = [
            ("year", i64::from(t.year())),
            ("month", i64::from(t.month())),
            ("day", i64::from(t.day())),
            ("hour", i64::from(t.hour())),
            ("min", i64::from(t.minute())),
            ("sec", i64::from(t.second())),
            ("wday", i64::from(t.weekday().number_from_sunday())),
            ("yday", i64::from(t.ordinal())),
        ];
        for (k, v) in fields {
            table.raw_set(k, v).map_err(err)?;
        }
        table.raw_set("isdst", false).map_err(err)?;
        return Ok(Value::Table(table));
    }
    let items: Vec<Item> = StrftimeItems::new(spec).collect();
    if items.iter().any(|i| matches!(i, Item::Error)) {
        return Err(format!(
            "bad argument #1 to 'date' (invalid conversion specifier '{spec}')"
        ));
    }
    let mut out = String::new();
    use std::fmt::Write;
    write!(out, "{}", t.format_with_items(items.into_iter())).map_err(|_| {
        format!("bad argument #1 to 'date' (invalid conversion specifier '{spec}')")
    })?;
    lua.create_string(out).map(Value::String).map_err(err)
}

/// `os.time(table)`: local time from the fields, normalised as `mktime` does (a day 32 is the
/// next month's first).
fn mktime(t: &Table) -> Result<Value, String> {
    let field = |k: &str, d: Option<i64>| -> Result<i64, String> {
        match t.get::<Option<f64>>(k).ok().flatten() {
            Some(v) => Ok(v.floor() as i64),
            None => d.ok_or(format!("field '{k}' missing in date table")),
        }
    };
    let (year, month, day) = (
        field("year", None)?,
        field("month", None)?,
        field("day", None)?,
    );
    let (hour, min, sec) = (
        field("hour", Some(12))?,
        field("min", Some(0))?,
        field("sec", Some(0))?,
    );
    let out_of_range = || "time result cannot be represented in this installation".to_owned();
    let year = i32::try_from(year).map_err(|_| out_of_range())?;
    let base = NaiveDate::from_ymd_opt(year, 1, 1).ok_or_else(out_of_range)?;
    let months = month - 1;
    let date = if months >= 0 {
        base.checked_add_months(Months::new(
            u32::try_from(months).map_err(|_| out_of_range())?,
        ))
    } else {
        base.checked_sub_months(Months::new(
            u32::try_from(-months).map_err(|_| out_of_range())?,
        ))
    }
    .ok_or_else(out_of_range)?;
    let offset = TimeDelta::try_days(day - 1)
        .and_then(|d| d.checked_add(&TimeDelta::try_hours(hour)?))
        .and_then(|d| d.checked_add(&TimeDelta::try_minutes(min)?))
        .and_then(|d| d.checked_add(&TimeDelta::try_seconds(sec)?))
        .ok_or_else(out_of_range)?;
    let naive = date
        .and_hms_opt(0, 0, 0)
        .and_then(|d| d.checked_add_signed(offset))
        .ok_or_else(out_of_range)?;
    let local = Local
        .from_local_datetime(&naive)
        .earliest()
        .ok_or_else(out_of_range)?;
    Ok(Value::Number(local.timestamp() as f64))
}

/// The natives `date`, `mktime` and `difftime`, for the bios's `os`.
pub(crate) fn install(lua: &Lua, t: &Table) -> mlua::Result<()> {
    t.set(
        "date",
        lua.create_function(|lua, (format, time): (Option<String>, Option<f64>)| {
            let r = date(lua, format, time);
            answer(lua, r)
        })?,
    )?;
    t.set(
        "mktime",
        lua.create_function(|lua, v: Value| {
            let r = match &v {
                Value::Table(t) => mktime(t),
                other => Err(format!(
                    "bad argument #1 to 'time' (table expected, got {})",
                    other.type_name()
                )),
            };
            answer(lua, r)
        })?,
    )?;
    t.set(
        "difftime",
        lua.create_function(|lua, (a, b): (Option<f64>, Option<f64>)| {
            let r = match a {
                Some(a) => Ok(Value::Number(a - b.unwrap_or(0.0))),
                None => Err("bad argument #1 to 'difftime' (number expected, got no value)".into()),
            };
            answer(lua, r)
        })?,
    )?;
    Ok(())
}
