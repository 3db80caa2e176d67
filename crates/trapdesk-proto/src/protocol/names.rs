//! [`wire_names!`]: a closed set of names that travel as strings (error codes, log events),
//! declared once as an enum so a name is written in one place and a list of them cannot miss
//! one.

/// A name that is none of a closed set's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {name:?}")]
pub struct UnknownName {
    /// What the set names ("error code", "log event").
    pub what: &'static str,
    pub name: String,
}

/// Declares an enum whose variants are written as strings: one row per variant gives its
/// name. From the one list come serde by that name, `ALL` (every variant, in declaration
/// order), `as_str`, `Display` and `FromStr` (refusing any other name with [`UnknownName`]).
/// The crate using it must depend on `serde`.
#[macro_export]
macro_rules! wire_names {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident ($what:literal) {
            $( $(#[$doc:meta])* $variant:ident = $wire:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        $vis enum $name {
            $( $(#[$doc])* #[serde(rename = $wire)] $variant, )*
        }

        impl $name {
            /// Every name, in declaration order.
            pub const ALL: [$name; [$($name::$variant),*].len()] = [$($name::$variant),*];

            /// The name as written.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $wire, )*
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::protocol::UnknownName;

            fn from_str(s: &str) -> Result<$name, $crate::protocol::UnknownName> {
                $name::ALL
                    .into_iter()
                    .find(|n| n.as_str() == s)
                    .ok_or_else(|| $crate::protocol::UnknownName {
                        what: $what,
                        name: s.to_owned(),
                    })
            }
        }
    };
}

/// The names of a markdown table's first column (`| `name` | ... |`), from the line after
/// the one that contains `marker` to the table's end: what the tests that hold a docs table
/// to its enum read.
#[doc(hidden)]
pub fn docs_table_names(doc: &str, marker: &str) -> Vec<String> {
    doc.lines()
        .skip_while(|l| !l.contains(marker))
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('|').nth(1))
        .map(str::trim)
        .filter_map(|c| c.strip_prefix('`').and_then(|c| c.strip_suffix('`')))
        .map(str::to_owned)
        .collect()
}
