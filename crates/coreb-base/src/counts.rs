//! Mergeable counters: the field-by-field `+=` that every stage's stats struct needs to add up
//! the stats of its shards or batches, written once ([`add_assign_fields!`](crate::add_assign_fields)).

/// Implements [`std::ops::AddAssign`] for a struct by adding each listed field of the right-hand
/// side to the same field of `self` (`self.f += o.f`). Every listed field's type must itself be
/// `AddAssign` (integers, or a struct with this impl); fields not listed are left as they are.
///
/// ```
/// #[derive(Debug, Default, PartialEq)]
/// struct Stats {
///     rows_in: u64,
///     rows_out: u64,
/// }
/// coreb_base::add_assign_fields!(Stats { rows_in, rows_out });
///
/// let mut a = Stats { rows_in: 3, rows_out: 1 };
/// a += Stats { rows_in: 2, rows_out: 2 };
/// assert_eq!(a, Stats { rows_in: 5, rows_out: 3 });
/// ```
#[macro_export]
macro_rules! add_assign_fields {
    ($ty:ty { $($field:ident),+ $(,)? }) => {
        impl ::std::ops::AddAssign for $ty {
            fn add_assign(&mut self, o: Self) {
                $(self.$field += o.$field;)+
            }
        }
    };
}

#[cfg(test)]
mod tests {
    #[derive(Debug, Default, Clone, Copy, PartialEq)]
    struct Inner {
        a: u64,
        b: u32,
    }
    crate::add_assign_fields!(Inner { a, b });

    #[derive(Debug, Default, Clone, Copy, PartialEq)]
    struct Outer {
        n: usize,
        inner: Inner,
        untouched: u8,
    }
    crate::add_assign_fields!(Outer { n, inner });

    #[test]
    fn adds_listed_fields_and_nested_structs() {
        let mut x = Outer { n: 1, inner: Inner { a: 2, b: 3 }, untouched: 7 };
        x += Outer { n: 10, inner: Inner { a: 20, b: 30 }, untouched: 9 };
        assert_eq!(x, Outer { n: 11, inner: Inner { a: 22, b: 33 }, untouched: 7 });
    }
}
