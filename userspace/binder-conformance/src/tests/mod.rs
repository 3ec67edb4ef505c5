//! The test areas. Each module lists its cases with `tests!`.

use crate::Test;

/// Build a module's test list: `tests!("area", case_fn, ...)` names each `area::case_fn`.
#[macro_export]
macro_rules! tests {
    ($area:literal, $($f:ident),* $(,)?) => {
        pub fn tests() -> Vec<$crate::Test> {
            vec![$($crate::Test { name: concat!($area, "::", stringify!($f)), f: $f }),*]
        }
    };
}

pub mod alloc;
pub mod bad_input;
pub mod binderfs;
pub mod death;
pub mod extended_error;
pub mod freeze;
pub mod freeze_notification;
pub mod ioctl;
pub mod logs;
pub mod looper;
pub mod mmap;
pub mod nested;
pub mod node_info;
pub mod objects;
pub mod priority;
pub mod refcount;
pub mod smoke;
pub mod spam;
pub mod trace;
pub mod transaction;

/// Every test, area by area: the basics first, then the uapi surface roughly in the
/// order a driver implements it, bad input and logs last.
pub fn all() -> Vec<Test> {
    let mut v = Vec::new();
    v.extend(smoke::tests());
    v.extend(binderfs::tests());
    v.extend(ioctl::tests());
    v.extend(mmap::tests());
    v.extend(alloc::tests());
    v.extend(transaction::tests());
    v.extend(objects::tests());
    v.extend(refcount::tests());
    v.extend(death::tests());
    v.extend(looper::tests());
    v.extend(nested::tests());
    v.extend(priority::tests());
    v.extend(freeze::tests());
    v.extend(freeze_notification::tests());
    v.extend(spam::tests());
    v.extend(extended_error::tests());
    v.extend(node_info::tests());
    v.extend(bad_input::tests());
    v.extend(logs::tests());
    v.extend(trace::tests());
    v
}
