//! The `switch!` macro: a configuration switch as an enum with the names users write.
//!
//! Every policy family of DESIGN.md (task queue, steal, termination, parking, GC affinity) is
//! declared with it, so each parses from its user-facing name (case-insensitively), displays
//! as that name, serializes as that name, and rejects a bad name with an error that lists the
//! allowed ones.

/// Defines a switch enum with its user-facing names, `FromStr`, `Display` and serde support.
macro_rules! switch {
    (
        $(#[$meta:meta])*
        $name:ident, $what:literal {
            $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in documentation order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The name users write.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The allowed names, comma-separated (for error messages).
            pub fn allowed() -> String {
                Self::ALL.iter().map(|v| v.name()).collect::<Vec<_>>().join(", ")
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = String;
            fn from_str(text: &str) -> Result<Self, String> {
                let lower = text.trim().to_ascii_lowercase();
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name() == lower)
                    .ok_or_else(|| format!("is not a {} (allowed: {})", $what, Self::allowed()))
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }
    };
}
