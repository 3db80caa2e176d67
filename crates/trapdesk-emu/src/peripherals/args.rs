//! Reading a peripheral method's arguments as CC: Tweaked's `IArguments` does, with its error
//! wording ("bad argument #1 (number expected, got string)", `LuaValues.badArgument`), so the
//! emulator's peripherals fail as a computer's do.

use mlua::Value;

/// The arguments of one method call (after the peripheral's name and the method's).
pub(crate) struct Args(pub Vec<Value>);

/// CC's type name for a value, as its argument errors write it.
fn type_name(v: Option<&Value>) -> &'static str {
    match v {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Boolean(_)) => "boolean",
        Some(Value::Integer(_) | Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Table(_)) => "table",
        Some(Value::Function(_)) => "function",
        Some(Value::Thread(_)) => "thread",
        Some(_) => "userdata",
    }
}

/// "bad argument #i (expected expected, got ...)".
pub(crate) fn bad(i: usize, expected: &str, got: Option<&Value>) -> String {
    format!(
        "bad argument #{i} ({expected} expected, got {})",
        type_name(got)
    )
}

impl Args {
    fn get(&self, i: usize) -> Option<&Value> {
        self.0.get(i - 1)
    }

    /// Whether argument `i` is missing or nil.
    pub(crate) fn is_nil(&self, i: usize) -> bool {
        matches!(self.get(i), None | Some(Value::Nil))
    }

    /// A finite number (CC's `getFiniteDouble`).
    pub(crate) fn number(&self, i: usize) -> Result<f64, String> {
        let n = match self.get(i) {
            Some(Value::Integer(n)) => *n as f64,
            Some(Value::Number(n)) => *n,
            other => return Err(bad(i, "number", other)),
        };
        if n.is_finite() {
            Ok(n)
        } else {
            Err(format!("bad argument #{i} (number expected, got {n})"))
        }
    }

    /// An integer, truncated toward zero as CC's `getInt` does.
    pub(crate) fn int(&self, i: usize) -> Result<i64, String> {
        self.number(i).map(|n| n as i64)
    }

    /// An optional integer: `None` for nil or a missing argument.
    pub(crate) fn opt_int(&self, i: usize) -> Result<Option<i64>, String> {
        if self.is_nil(i) {
            Ok(None)
        } else {
            self.int(i).map(Some)
        }
    }

    /// An optional number.
    pub(crate) fn opt_number(&self, i: usize) -> Result<Option<f64>, String> {
        if self.is_nil(i) {
            Ok(None)
        } else {
            self.number(i).map(Some)
        }
    }

    /// A string's bytes (numbers are not coerced).
    pub(crate) fn bytes(&self, i: usize) -> Result<Vec<u8>, String> {
        match self.get(i) {
            Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
            other => Err(bad(i, "string", other)),
        }
    }

    /// A string.
    pub(crate) fn string(&self, i: usize) -> Result<String, String> {
        self.bytes(i)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    /// An optional string.
    pub(crate) fn opt_string(&self, i: usize) -> Result<Option<String>, String> {
        if self.is_nil(i) {
            Ok(None)
        } else {
            self.string(i).map(Some)
        }
    }

    /// A boolean.
    pub(crate) fn boolean(&self, i: usize) -> Result<bool, String> {
        match self.get(i) {
            Some(Value::Boolean(b)) => Ok(*b),
            other => Err(bad(i, "boolean", other)),
        }
    }

    /// A table.
    pub(crate) fn table(&self, i: usize) -> Result<mlua::Table, String> {
        match self.get(i) {
            Some(Value::Table(t)) => Ok(t.clone()),
            other => Err(bad(i, "table", other)),
        }
    }

    /// Any value, as text (CC's `Coerced<String>`: what `tostring` gives).
    pub(crate) fn coerced(&self, i: usize) -> Result<Vec<u8>, String> {
        Ok(match self.get(i) {
            Some(Value::String(s)) => s.as_bytes().to_vec(),
            Some(Value::Integer(n)) => n.to_string().into_bytes(),
            Some(Value::Number(n)) => super::super::number::number_text(*n).into_bytes(),
            Some(Value::Boolean(b)) => b.to_string().into_bytes(),
            None | Some(Value::Nil) => b"nil".to_vec(),
            Some(v) => v.to_string().unwrap_or_default().into_bytes(),
        })
    }
}
