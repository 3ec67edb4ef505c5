//! Android binder uapi of Linux 6.12, a BC_/BR_ protocol layer and test helpers.
//!
//! Written for the meta-rust-binder conformance suite; only depends on `libc`.

pub mod binder;
pub mod harness;
pub mod proto;
pub mod uapi;

pub use binder::{binderfs, errno_name, res_name, Binder, Received};
pub use harness::{fork_proc, run_isolated, Outcome, Pipe, Proc, TResult, TestErr};
pub use proto::{decode, names, Payload, Return, WriteBuf};
pub use uapi::*;
