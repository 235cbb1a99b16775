//! Values written as a fixed name (a verdict, a language, a stage): their `Display` is their
//! `as_str`, written once ([`display_as_str!`](crate::display_as_str)).

/// Implements [`std::fmt::Display`] for a type with an `as_str(self) -> &'static str` (or
/// `&self`) method: a value is shown as its name, as the tables and the MANIFEST write it.
///
/// ```
/// #[derive(Clone, Copy)]
/// enum Side { Left, Right }
/// impl Side {
///     fn as_str(self) -> &'static str {
///         match self { Side::Left => "left", Side::Right => "right" }
///     }
/// }
/// coreb_base::display_as_str!(Side);
/// assert_eq!(format!("{} | {}", Side::Left, Side::Right), "left | right");
/// ```
#[macro_export]
macro_rules! display_as_str {
    ($($ty:ty),+ $(,)?) => {
        $(impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        })+
    };
}
