//! bad_input: malformed arguments and protocol abuse. Each case asserts the C driver's
//! exact errno / BR_* and that the process can still make a call afterwards.

use crate::common::*;
use crate::Ctx;
use binder_uapi::*;

crate::tests!(
    "bad_input",
    version_null_ptr,
    version_kernel_ptr,
    set_max_threads_null_ptr,
    set_context_mgr_ext_null_ptr,
    node_debug_info_null_ptr,
    node_info_for_ref_null_ptr,
    freeze_null_ptr,
    frozen_info_null_ptr,
    spam_detection_null_ptr,
    extended_error_null_ptr,
    write_read_null_ptr,
    write_read_kernel_ptr,
    write_read_unaligned_ptr,
    write_buffer_null,
    read_buffer_null,
    read_buffer_readonly,
    truncated_command_efault,
    unknown_command,
    unknown_command_consumed,
    attempt_acquire_rejected,
    acquire_result_rejected,
    free_buffer_bogus,
    free_buffer_twice,
    free_buffer_mid_buffer,
    free_buffer_of_other_proc,
    txn_data_null,
    txn_data_kernel_ptr,
    txn_offsets_null,
    txn_offsets_size_unaligned,
    txn_offset_out_of_buffer,
    txn_offset_unaligned,
    txn_object_truncated,
    txn_objects_overlap,
    txn_objects_unsorted,
    txn_object_type_lies,
    txn_handle_nonexistent,
    txn_handle_zero_without_ref,
    txn_binder_cookie_mismatch,
    txn_fd_invalid,
    txn_data_size_huge,
    txn_data_size_overflow,
    txn_offsets_size_overflow,
    sg_buffers_size_unaligned,
    sg_ptr_too_large,
    sg_ptr_null_buffer,
    sg_parent_out_of_range,
    sg_parent_not_ptr,
    sg_parent_offset_out_of_parent,
    fda_parent_not_ptr,
    fda_too_many_fds,
    ptr_in_plain_transaction,
    ioctl_after_thread_exit,
    reply_after_thread_exit,
    free_buffer_after_thread_exit,
    free_buffer_not_yet_delivered,
    command_overruns_write_size,
);

/// An address in the kernel half of the arm64/x86_64 address space. As a u64 field of a
/// uapi struct (binder_uintptr_t) it is the same value for a 32-bit (compat) process:
/// the driver takes such fields as 64-bit user pointers.
const KERNEL_PTR: u64 = 0xffff_8000_0000_0000;

/// `KERNEL_PTR` as an ioctl argument. A 32-bit process cannot pass one: its argument is a
/// 32-bit value that compat_ptr() zero-extends into the low 4 GiB, all of it user space
/// on arm64, so the case is the NULL case again; skip it there.
fn kernel_ptr_arg() -> TResult<usize> {
    match usize::try_from(KERNEL_PTR) {
        Ok(p) => Ok(p),
        Err(_) => binder_uapi::skip!(
            "32-bit process: an ioctl argument cannot be a kernel address \
             (compat_ptr() zero-extends it into the low 4 GiB); the NULL case covers an \
             unusable argument"
        ),
    }
}

/// Open a client and expect `req` with argument `arg` to fail with `errno`.
fn ioctl_arg_errno(c: &Ctx, req: u32, arg: usize, errno: i32, what: &str) -> TResult {
    let b = client(c)?;
    expect_errno(b.ioctl_raw(req, arg), errno, what)
}

// 7.2 upstream Rust: unwritable BINDER_VERSION arg gives EFAULT (process.rs:Process::version
//   via UserSlice); C's binder_ioctl returns EINVAL (docs/oracle.md)
fn version_null_ptr(c: &Ctx) -> TResult {
    let b = client(c)?;
    expect_errno(
        b.ioctl_raw(BINDER_VERSION, 0),
        libc::EINVAL,
        "BINDER_VERSION(NULL)",
    )?;
    ensure_eq!(b.version()?, 8, "version afterwards");
    Ok(())
}

// 7.2 upstream Rust: kernel-address BINDER_VERSION arg gives EFAULT
//   (process.rs:Process::version via UserSlice); C returns EINVAL (docs/oracle.md)
fn version_kernel_ptr(c: &Ctx) -> TResult {
    let arg = kernel_ptr_arg()?;
    ioctl_arg_errno(
        c,
        BINDER_VERSION,
        arg,
        libc::EINVAL,
        "BINDER_VERSION(kernel ptr)",
    )
}

// 7.2 upstream Rust: unreadable arg gives EFAULT (process.rs:Process::ioctl_write_only,
//   reader.read()?); C's copy_from_user failure is EINVAL (docs/oracle.md)
fn set_max_threads_null_ptr(c: &Ctx) -> TResult {
    ioctl_arg_errno(
        c,
        BINDER_SET_MAX_THREADS,
        0,
        libc::EINVAL,
        "BINDER_SET_MAX_THREADS(NULL)",
    )
}

// 7.2 upstream Rust: unreadable arg gives EFAULT (process.rs:Process::ioctl_write_only); C
//   returns EINVAL (docs/oracle.md)
fn set_context_mgr_ext_null_ptr(c: &Ctx) -> TResult {
    let b = client(c)?;
    expect_errno(
        b.ioctl_raw(BINDER_SET_CONTEXT_MGR_EXT, 0),
        libc::EINVAL,
        "BINDER_SET_CONTEXT_MGR_EXT(NULL)",
    )?;
    // The failed attempt did not claim the manager role.
    expect_ok(b.set_context_mgr(), "BINDER_SET_CONTEXT_MGR afterwards")
}

fn node_debug_info_null_ptr(c: &Ctx) -> TResult {
    ioctl_arg_errno(
        c,
        BINDER_GET_NODE_DEBUG_INFO,
        0,
        libc::EFAULT,
        "GET_NODE_DEBUG_INFO(NULL)",
    )
}

fn node_info_for_ref_null_ptr(c: &Ctx) -> TResult {
    let b = client(c)?;
    b.set_context_mgr()?;
    expect_errno(
        b.ioctl_raw(BINDER_GET_NODE_INFO_FOR_REF, 0),
        libc::EFAULT,
        "GET_NODE_INFO_FOR_REF(NULL)",
    )
}

fn freeze_null_ptr(c: &Ctx) -> TResult {
    ioctl_arg_errno(c, BINDER_FREEZE, 0, libc::EFAULT, "BINDER_FREEZE(NULL)")
}

fn frozen_info_null_ptr(c: &Ctx) -> TResult {
    ioctl_arg_errno(
        c,
        BINDER_GET_FROZEN_INFO,
        0,
        libc::EFAULT,
        "GET_FROZEN_INFO(NULL)",
    )
}

fn spam_detection_null_ptr(c: &Ctx) -> TResult {
    ioctl_arg_errno(
        c,
        BINDER_ENABLE_ONEWAY_SPAM_DETECTION,
        0,
        libc::EFAULT,
        "ENABLE_ONEWAY_SPAM_DETECTION(NULL)",
    )
}

fn extended_error_null_ptr(c: &Ctx) -> TResult {
    ioctl_arg_errno(
        c,
        BINDER_GET_EXTENDED_ERROR,
        0,
        libc::EFAULT,
        "GET_EXTENDED_ERROR(NULL)",
    )
}

fn write_read_null_ptr(c: &Ctx) -> TResult {
    with_std(c, |b| {
        expect_errno(
            b.ioctl_raw(BINDER_WRITE_READ, 0),
            libc::EFAULT,
            "BINDER_WRITE_READ(NULL)",
        )?;
        still_works(b)?;
        Ok(())
    })
}

fn write_read_kernel_ptr(c: &Ctx) -> TResult {
    let arg = kernel_ptr_arg()?;
    with_std(c, |b| {
        expect_errno(
            b.ioctl_raw(BINDER_WRITE_READ, arg),
            libc::EFAULT,
            "BINDER_WRITE_READ(kernel ptr)",
        )?;
        still_works(b)?;
        Ok(())
    })
}

fn write_read_unaligned_ptr(c: &Ctx) -> TResult {
    // An unaligned (but valid) binder_write_read is fine.
    let b = client(c)?;
    let mut raw = [0u8; 64];
    let p = raw.as_mut_ptr() as usize + 3;
    expect_ok(
        b.ioctl_raw(BINDER_WRITE_READ, p),
        "BINDER_WRITE_READ(unaligned, zero sizes)",
    )?;
    Ok(())
}

fn write_buffer_null(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut bwr = binder_write_read {
            write_size: 4,
            write_buffer: 0,
            ..Default::default()
        };
        expect_errno(
            b.write_read_raw(&mut bwr),
            libc::EFAULT,
            "write_buffer NULL",
        )?;
        ensure_eq!(bwr.write_consumed, 0, "write_consumed");
        let mut bwr = binder_write_read {
            write_size: 4,
            write_buffer: KERNEL_PTR,
            ..Default::default()
        };
        expect_errno(
            b.write_read_raw(&mut bwr),
            libc::EFAULT,
            "write_buffer kernel ptr",
        )?;
        still_works(b)?;
        Ok(())
    })
}

fn read_buffer_null(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut bwr = binder_write_read {
            read_size: 64,
            read_buffer: 0,
            ..Default::default()
        };
        expect_errno(b.write_read_raw(&mut bwr), libc::EFAULT, "read_buffer NULL")?;
        ensure_eq!(bwr.read_consumed, 0, "read_consumed");
        still_works(b)?;
        Ok(())
    })
}

fn read_buffer_readonly(c: &Ctx) -> TResult {
    // The binder mapping itself is read-only for userspace: reading returns into it fail.
    with_std(c, |b| {
        b.transact(0, CODE_ECHO, TF_ONE_WAY, &Payload::new())?;
        let mut bwr = binder_write_read {
            read_size: 64,
            read_buffer: b.map_addr(),
            ..Default::default()
        };
        expect_errno(
            b.write_read_raw(&mut bwr),
            libc::EFAULT,
            "read into the read-only binder mapping",
        )?;
        // The pending BR_TRANSACTION_COMPLETE was not lost.
        b.expect(BR_TRANSACTION_COMPLETE)?;
        still_works(b)?;
        Ok(())
    })
}

fn truncated_command_efault(c: &Ctx) -> TResult {
    // BC_TRANSACTION as the last 4 bytes of a page followed by an unmapped page.
    with_std(c, |b| {
        // SAFETY: anonymous mapping owned by this test.
        let base = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                8192,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        ensure!(base != libc::MAP_FAILED, "mmap failed");
        // SAFETY: the second page of our mapping.
        unsafe { libc::munmap((base as usize + 4096) as *mut libc::c_void, 4096) };
        let cmd_at = base as usize + 4096 - 4;
        // SAFETY: inside the first page.
        unsafe { core::ptr::write_unaligned(cmd_at as *mut u32, BC_TRANSACTION) };
        let mut bwr = binder_write_read {
            write_size: 4 + 64,
            write_buffer: cmd_at as u64,
            ..Default::default()
        };
        expect_errno(
            b.write_read_raw(&mut bwr),
            libc::EFAULT,
            "truncated BC_TRANSACTION",
        )?;
        ensure_eq!(bwr.write_consumed, 0, "write_consumed");
        still_works(b)?;
        Ok(())
    })
}

/// Write `w` (one command) and expect EINVAL with nothing consumed.
fn expect_rejected(b: &Binder, w: &WriteBuf, what: &str) -> TResult {
    let (r, consumed) = b.write_consumed(w);
    expect_errno(r, libc::EINVAL, what)?;
    ensure_eq!(consumed, 0, "write_consumed");
    Ok(())
}

fn unknown_command(c: &Ctx) -> TResult {
    with_std(c, |b| {
        for code in [
            0u32,
            0xffff_ffff,
            uapi::io(b'c', 22),
            uapi::io(b'c', 0),
            BR_NOOP,
        ] {
            let mut w = WriteBuf::new();
            w.cmd(code);
            expect_rejected(b, &w, &format!("command {code:#x}"))?;
        }
        still_works(b)?;
        Ok(())
    })
}

fn unknown_command_consumed(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut w = WriteBuf::new();
        w.enter_looper().exit_looper();
        let good = w.len() as u64;
        w.cmd(0x1234_5678).enter_looper();
        let (r, consumed) = b.write_consumed(&w);
        expect_errno(r, libc::EINVAL, "unknown command after two good ones")?;
        ensure_eq!(
            consumed,
            good,
            "write_consumed (stops before the bad command)"
        );
        still_works(b)?;
        Ok(())
    })
}

fn attempt_acquire_rejected(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut w = WriteBuf::new();
        w.cmd_with(
            BC_ATTEMPT_ACQUIRE,
            &binder_pri_desc {
                priority: 0,
                desc: 0,
            },
        );
        expect_rejected(b, &w, "BC_ATTEMPT_ACQUIRE")?;
        // BR_ATTEMPT_ACQUIRE / BR_ACQUIRE_RESULT / BR_FINISHED / BR_OK are never sent.
        ensure_never_sent(b)?;
        still_works(b)?;
        Ok(())
    })
}

fn acquire_result_rejected(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut w = WriteBuf::new();
        w.cmd_with(BC_ACQUIRE_RESULT, &0i32);
        expect_rejected(b, &w, "BC_ACQUIRE_RESULT")?;
        ensure_never_sent(b)?;
        still_works(b)?;
        Ok(())
    })
}

/// Nothing is pending, in particular none of the never-sent BR_* codes.
fn ensure_never_sent(b: &Binder) -> TResult {
    let v = b.drain(100);
    for r in &v {
        let code = r.code();
        ensure!(
            ![BR_ATTEMPT_ACQUIRE, BR_ACQUIRE_RESULT, BR_FINISHED, BR_OK].contains(&code),
            "driver sent {}, which it never should",
            r.name()
        );
    }
    ensure!(v.is_empty(), "unexpected returns: {}", names(&v));
    Ok(())
}

fn free_buffer_bogus(c: &Ctx) -> TResult {
    with_std(c, |b| {
        for p in [
            0u64,
            8,
            b.map_addr(),
            b.map_addr() + 4096,
            KERNEL_PTR,
            u64::MAX,
        ] {
            expect_ok(
                b.free_buffer(p),
                &format!("BC_FREE_BUFFER({p:#x}) is ignored"),
            )?;
        }
        b.expect_nothing(100)?;
        still_works(b)?;
        Ok(())
    })
}

fn free_buffer_twice(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let r = b.call_nofree(0, CODE_ECHO, &Payload::from_bytes(b"twice"))?;
        expect_ok(b.free_buffer(r.td.buffer), "first BC_FREE_BUFFER")?;
        expect_ok(
            b.free_buffer(r.td.buffer),
            "second BC_FREE_BUFFER (ignored)",
        )?;
        b.expect_nothing(100)?;
        // The same address is handed out again and works normally.
        let r2 = b.call_nofree(0, CODE_ECHO, &Payload::from_bytes(b"again"))?;
        ensure_eq!(r2.data, b"again".to_vec(), "reply after a double free");
        b.free_buffer(r2.td.buffer)?;
        still_works(b)?;
        Ok(())
    })
}

fn free_buffer_mid_buffer(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let r = b.call_nofree(0, CODE_ECHO, &pattern(64, 1))?;
        expect_ok(
            b.free_buffer(r.td.buffer + 8),
            "BC_FREE_BUFFER(buffer + 8) is ignored",
        )?;
        // The real buffer is still allocated and intact.
        let again = b.received(&r.td)?;
        ensure!(again.data == pattern(64, 1).data, "buffer content changed");
        expect_ok(b.free_buffer(r.td.buffer), "BC_FREE_BUFFER(buffer)")?;
        still_works(b)?;
        Ok(())
    })
}

fn free_buffer_of_other_proc(c: &Ctx) -> TResult {
    // A second binder fd of this process has its own allocator: the first fd's buffer
    // address means nothing to it.
    with_std(c, |b| {
        let b2 = client(c)?;
        let r = b.call_nofree(0, CODE_ECHO, &pattern(32, 2))?;
        expect_ok(
            b2.free_buffer(r.td.buffer),
            "BC_FREE_BUFFER of another proc's buffer",
        )?;
        let again = b.received(&r.td)?;
        ensure!(again.data == pattern(32, 2).data, "buffer content changed");
        b.free_buffer(r.td.buffer)?;
        still_works(b)?;
        still_works(&b2)?;
        Ok(())
    })
}

/// Send a hand-built transaction, expect BR_FAILED_REPLY with `param` in the extended
/// error, then a good call.
fn bad_txn(b: &Binder, td: &binder_transaction_data, param: i32, what: &str) -> TResult {
    let mut w = WriteBuf::new();
    w.raw_transaction(BC_TRANSACTION, td);
    expect_txn_error(b, &w, BR_FAILED_REPLY, what)?;
    expect_ext_err(b, BR_FAILED_REPLY, param, what)?;
    b.expect_nothing(50)?;
    still_works(b)
}

/// Same with BC_TRANSACTION_SG.
fn bad_txn_sg(
    b: &Binder,
    td: &binder_transaction_data,
    extra: u64,
    param: i32,
    what: &str,
) -> TResult {
    let mut w = WriteBuf::new();
    w.cmd_with(
        BC_TRANSACTION_SG,
        &binder_transaction_data_sg {
            transaction_data: *td,
            buffers_size: extra,
        },
    );
    expect_txn_error(b, &w, BR_FAILED_REPLY, what)?;
    expect_ext_err(b, BR_FAILED_REPLY, param, what)?;
    b.expect_nothing(50)?;
    still_works(b)
}

fn td_for(p: &Payload, offsets: &[u64]) -> (binder_transaction_data, Vec<u8>) {
    let mut ob = Vec::new();
    for o in offsets {
        ob.extend_from_slice(&o.to_ne_bytes());
    }
    let td = binder_transaction_data {
        target: 0,
        code: CODE_ECHO,
        data_size: p.data.len() as u64,
        offsets_size: ob.len() as u64,
        buffer: p.data.as_ptr() as u64,
        offsets: ob.as_ptr() as u64,
        ..Default::default()
    };
    (td, ob)
}

fn txn_data_null(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let td = binder_transaction_data {
            code: CODE_ECHO,
            data_size: 16,
            buffer: 0,
            ..Default::default()
        };
        bad_txn(b, &td, -libc::EFAULT, "data pointer NULL")?;
        Ok(())
    })
}

fn txn_data_kernel_ptr(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let td = binder_transaction_data {
            code: CODE_ECHO,
            data_size: 16,
            buffer: KERNEL_PTR,
            ..Default::default()
        };
        bad_txn(b, &td, -libc::EFAULT, "data pointer in the kernel")?;
        Ok(())
    })
}

fn txn_offsets_null(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let p = pattern(32, 0);
        let td = binder_transaction_data {
            code: CODE_ECHO,
            data_size: 32,
            offsets_size: 8,
            buffer: p.data.as_ptr() as u64,
            offsets: 0,
            ..Default::default()
        };
        bad_txn(b, &td, -libc::EFAULT, "offsets pointer NULL")?;
        Ok(())
    })
}

fn txn_offsets_size_unaligned(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut p = Payload::new();
        p.handle(0);
        let (mut td, _ob) = td_for(&p, &[0]);
        td.offsets_size = 4;
        bad_txn(b, &td, -libc::EINVAL, "offsets_size 4")?;
        td.offsets_size = 9;
        bad_txn(b, &td, -libc::EINVAL, "offsets_size 9")?;
        Ok(())
    })
}

// 7.2 upstream Rust: offset past data_size: -EINVAL from AllocationView::copy_into's bounds
//   check (allocation.rs, via thread.rs:copy_transaction_data); C's data-between-objects copy
//   check gives -EFAULT (docs/oracle.md)
fn txn_offset_out_of_buffer(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let p = pattern(48, 0);
        // At the end of the data, or too close to it for an object header: EINVAL.
        for off in [48u64, 44] {
            let (td, _ob) = td_for(&p, &[off]);
            bad_txn(
                b,
                &td,
                -libc::EINVAL,
                &format!("object offset {off} of data_size 48"),
            )?;
        }
        // Past the end: the copy of the data before the "object" fails first, EFAULT.
        for off in [56u64, 1 << 20, u64::MAX - 7] {
            let (td, _ob) = td_for(&p, &[off]);
            bad_txn(
                b,
                &td,
                -libc::EFAULT,
                &format!("object offset {off:#x} past data_size 48"),
            )?;
        }
        Ok(())
    })
}

fn txn_offset_unaligned(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut p = Payload::new();
        p.bytes(&[0u8; 2]);
        p.raw_object(&flat_binder_object {
            hdr: binder_object_header {
                type_: BINDER_TYPE_BINDER,
            },
            ..Default::default()
        });
        let mut bytes = vec![0u8; 2];
        bytes.extend_from_slice(&p.data[8..]);
        let p2 = Payload::from_bytes(&bytes);
        let (td, _ob) = td_for(&p2, &[2]);
        bad_txn(b, &td, -libc::EINVAL, "object at offset 2")?;
        Ok(())
    })
}

// 7.2 upstream Rust: truncated object: -EFAULT from BinderObject::read_from's reader.skip
//   (allocation.rs); C's binder_get_object finds no object -> -EINVAL (docs/oracle.md)
fn txn_object_truncated(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut p = Payload::new();
        p.binder(0x100, 0x200, 0);
        p.data.truncate(16);
        let (td, _ob) = td_for(&p, &[0]);
        bad_txn(
            b,
            &td,
            -libc::EINVAL,
            "flat_binder_object cut at 16 of 24 bytes",
        )?;
        Ok(())
    })
}

// 7.2 upstream Rust: overlapping offsets: -EINVAL (thread.rs:copy_transaction_data, offset <
//   end_of_previous_object); C -EFAULT (user_offset > object_offset) (docs/oracle.md)
fn txn_objects_overlap(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut p = Payload::new();
        p.binder(0x100, 0x200, 0);
        p.binder(0x300, 0x400, 0);
        let (td, _ob) = td_for(&p, &[0, 8]);
        // The C driver notices the backwards step while copying the data before the
        // second object, so this is an EFAULT ("invalid data ptr"), not EINVAL.
        bad_txn(b, &td, -libc::EFAULT, "second object overlapping the first")?;
        Ok(())
    })
}

// 7.2 upstream Rust: decreasing offsets: -EINVAL (thread.rs:copy_transaction_data); C -EFAULT
//   (docs/oracle.md)
fn txn_objects_unsorted(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut p = Payload::new();
        p.binder(0x100, 0x200, 0);
        p.binder(0x300, 0x400, 0);
        let (td, _ob) = td_for(&p, &[24, 0]);
        bad_txn(b, &td, -libc::EFAULT, "offsets in decreasing order")?;
        Ok(())
    })
}

fn txn_object_type_lies(c: &Ctx) -> TResult {
    with_std(c, |b| {
        for ty in [
            0u32,
            0x1234_5678,
            b_pack_chars(b's', b'b', b'*', 0x84),
            BINDER_TYPE_BINDER + 1,
        ] {
            let mut p = Payload::new();
            p.object(&flat_binder_object {
                hdr: binder_object_header { type_: ty },
                ..Default::default()
            });
            let (td, _ob) = td_for(&p, &[0]);
            bad_txn(b, &td, -libc::EINVAL, &format!("object type {ty:#x}"))?;
        }
        Ok(())
    })
}

// 7.2 upstream Rust: BINDER_TYPE_HANDLE not held: -ENOENT
//   (process.rs:Process::get_node_from_handle via translate_object); C binder_translate_handle
//   -EINVAL (docs/oracle.md)
fn txn_handle_nonexistent(c: &Ctx) -> TResult {
    with_std(c, |b| {
        for h in [1u32, 77, u32::MAX] {
            let mut p = Payload::new();
            p.handle(h);
            let (td, _ob) = td_for(&p, &[0]);
            bad_txn(
                b,
                &td,
                -libc::EINVAL,
                &format!("BINDER_TYPE_HANDLE {h} not held"),
            )?;
            let mut p = Payload::new();
            p.weak_handle(h);
            let (td, _ob) = td_for(&p, &[0]);
            bad_txn(
                b,
                &td,
                -libc::EINVAL,
                &format!("BINDER_TYPE_WEAK_HANDLE {h} not held"),
            )?;
        }
        Ok(())
    })
}

// 7.2 upstream Rust: handle 0 not held: -ENOENT (process.rs:Process::get_node_from_handle); C
//   -EINVAL (docs/oracle.md)
fn txn_handle_zero_without_ref(c: &Ctx) -> TResult {
    // Calling handle 0 does not create a reference; passing handle 0 as an object needs one.
    with_std(c, |b| {
        let mut p = Payload::new();
        p.handle(0);
        let (td, _ob) = td_for(&p, &[0]);
        bad_txn(
            b,
            &td,
            -libc::EINVAL,
            "BINDER_TYPE_HANDLE 0 without BC_ACQUIRE 0",
        )?;
        Ok(())
    })
}

fn txn_binder_cookie_mismatch(c: &Ctx) -> TResult {
    with_std(c, |b| {
        // First transfer creates node 0x700 with cookie 1 (the server drops its ref at free).
        let mut p = Payload::new();
        p.binder(0x700, 1, 0);
        let (td, _ob) = td_for(&p, &[0]);
        let mut w = WriteBuf::new();
        w.raw_transaction(BC_TRANSACTION, &td);
        let (_, last) = b.call_raw(&w)?;
        ensure!(
            last.code() == BR_REPLY,
            "first transfer: got {}",
            last.name()
        );
        b.free_buffer(last.txn().unwrap().buffer)?;
        // The node stays alive: this process never answered BR_INCREFS/BR_ACQUIRE, so the
        // driver holds local refs on it. Send the same ptr with another cookie.
        let mut p = Payload::new();
        p.binder(0x700, 2, 0);
        p.binder(0x700, 1, 0);
        let (td, _ob) = td_for(&p, &[0, 24]);
        let mut w = WriteBuf::new();
        w.raw_transaction(BC_TRANSACTION, &td);
        let (pre, last) = b.call_raw(&w)?;
        ensure!(
            last == Return::FailedReply,
            "same ptr with two cookies: expected BR_FAILED_REPLY, got {} {}",
            names(&pre),
            last.name()
        );
        expect_ext_err(b, BR_FAILED_REPLY, -libc::EINVAL, "cookie mismatch")?;
        b.drain(100);
        still_works(b)?;
        Ok(())
    })
}

fn txn_fd_invalid(c: &Ctx) -> TResult {
    // The manager accepts fds; a bad fd number is EBADF.
    let ready = harness::Pipe::new()?;
    let dev = c.dev.clone();
    let srv = harness::fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr_ext(FLAT_BINDER_FLAG_ACCEPTS_FDS, 0, 0)?;
        b.enter_looper()?;
        ready.send_u64(1)?;
        serve_loop(&b, std_handler)
    })?;
    ready.recv_u64()?;
    let b = client(c)?;
    for fd in [-1i32, 9999, i32::MAX] {
        let mut p = Payload::new();
        p.fd(fd, 0);
        let (td, _ob) = td_for(&p, &[0]);
        bad_txn(&b, &td, -libc::EBADF, &format!("fd object with fd {fd}"))?;
    }
    srv.kill();
    Ok(())
}

fn txn_data_size_huge(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let p = pattern(16, 0);
        let (mut td, _ob) = td_for(&p, &[]);
        td.data_size = 1 << 40;
        bad_txn(b, &td, -libc::ENOSPC, "data_size 1 TiB")?;
        td.data_size = binder_uapi::binder::DEFAULT_MAP_SIZE as u64 + 8;
        bad_txn(b, &td, -libc::ENOSPC, "data_size larger than the mapping")?;
        Ok(())
    })
}

fn txn_data_size_overflow(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let p = pattern(16, 0);
        let (mut td, _ob) = td_for(&p, &[]);
        td.data_size = u64::MAX - 3;
        bad_txn(
            b,
            &td,
            -libc::EINVAL,
            "data_size that overflows when aligned",
        )?;
        Ok(())
    })
}

// 7.2 upstream Rust: size overflow gives -ENOMEM (thread.rs:copy_transaction_data,
//   checked_add().ok_or(ENOMEM)); C binder_alloc_new_buf -EINVAL (docs/oracle.md)
fn txn_offsets_size_overflow(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let p = pattern(16, 0);
        let (mut td, _ob) = td_for(&p, &[]);
        td.offsets_size = u64::MAX - 7;
        td.offsets = p.data.as_ptr() as u64;
        bad_txn(
            b,
            &td,
            -libc::EINVAL,
            "offsets_size that overflows the total",
        )?;
        Ok(())
    })
}

fn sg_buffers_size_unaligned(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let p = pattern(16, 0);
        let (td, _ob) = td_for(&p, &[]);
        bad_txn_sg(b, &td, 12, -libc::EINVAL, "buffers_size 12")?;
        Ok(())
    })
}

fn sg_ptr_too_large(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let blob = [7u8; 64];
        let mut p = Payload::new();
        p.ptr(blob.as_ptr() as u64, 64, None);
        let (td, _ob) = td_for(&p, &[0]);
        bad_txn_sg(
            b,
            &td,
            56,
            -libc::EINVAL,
            "PTR of 64 bytes with buffers_size 56",
        )?;
        bad_txn(
            b,
            &td,
            -libc::EINVAL,
            "PTR object in a plain BC_TRANSACTION",
        )?;
        Ok(())
    })
}

fn ptr_in_plain_transaction(c: &Ctx) -> TResult {
    // A zero-length PTR fits in zero extra space, even in a plain BC_TRANSACTION.
    with_std(c, |b| {
        let blob = [7u8; 8];
        let mut p = Payload::new();
        p.ptr(blob.as_ptr() as u64, 0, None);
        let (td, _ob) = td_for(&p, &[0]);
        let mut w = WriteBuf::new();
        w.raw_transaction(BC_TRANSACTION, &td);
        let (_, last) = b.call_raw(&w)?;
        ensure!(
            last.code() == BR_REPLY,
            "zero-length PTR: expected BR_REPLY, got {}",
            last.name()
        );
        b.free_buffer(last.txn().unwrap().buffer)?;
        Ok(())
    })
}

// 7.2 upstream Rust: unreadable PTR buffer: -EFAULT from the user copy in
//   thread.rs:Thread::apply_sg; C's deferred copy maps the short copy to -EINVAL (docs/oracle.md)
fn sg_ptr_null_buffer(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut p = Payload::new();
        p.ptr(0, 32, None);
        let (td, _ob) = td_for(&p, &[0]);
        bad_txn_sg(b, &td, 32, -libc::EINVAL, "PTR with buffer NULL")?;
        Ok(())
    })
}

fn sg_parent_out_of_range(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let parent = [0u64; 4];
        let child = [1u8; 16];
        let mut p = Payload::new();
        p.u64(0);
        p.ptr(parent.as_ptr() as u64, 32, None);
        p.ptr(child.as_ptr() as u64, 16, Some((5, 0)));
        let (td, _ob) = td_for(&p, &[8, 48]);
        bad_txn_sg(b, &td, 48, -libc::EINVAL, "PTR parent index 5 of 2")?;
        // A parent index pointing at the child itself is also out of the valid range.
        let mut p = Payload::new();
        p.u64(0);
        p.ptr(parent.as_ptr() as u64, 32, None);
        p.ptr(child.as_ptr() as u64, 16, Some((1, 0)));
        let (td, _ob) = td_for(&p, &[8, 48]);
        bad_txn_sg(b, &td, 48, -libc::EINVAL, "PTR parent index = itself")?;
        Ok(())
    })
}

fn sg_parent_not_ptr(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let child = [1u8; 16];
        let mut p = Payload::new();
        p.binder(0x100, 0x200, 0);
        p.ptr(child.as_ptr() as u64, 16, Some((0, 0)));
        let (td, _ob) = td_for(&p, &[0, 24]);
        bad_txn_sg(
            b,
            &td,
            16,
            -libc::EINVAL,
            "PTR whose parent is a binder object",
        )?;
        Ok(())
    })
}

fn sg_parent_offset_out_of_parent(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let parent = [0u64; 4];
        let child = [1u8; 16];
        // (The parent is not at offset 0: a parent at data offset 0 is always rejected.)
        let mut p = Payload::new();
        p.u64(0);
        p.ptr(parent.as_ptr() as u64, 32, None);
        p.ptr(child.as_ptr() as u64, 16, Some((0, 28)));
        let (td, _ob) = td_for(&p, &[8, 48]);
        bad_txn_sg(
            b,
            &td,
            48,
            -libc::EINVAL,
            "fixup at parent offset 28 of a 32-byte parent",
        )?;
        Ok(())
    })
}

// 7.2 upstream Rust: FDA to a node without ACCEPTS_FDS: -EPERM before the parent is checked
//   (thread.rs:Thread::translate_object, Fda arm); C validates the parent first (-EINVAL) and
//   checks accept_fds per fd (docs/oracle.md)
fn fda_parent_not_ptr(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut p = Payload::new();
        p.binder(0x100, 0x200, 0);
        p.fda(1, 0, 0);
        let (td, _ob) = td_for(&p, &[0, 24]);
        bad_txn_sg(
            b,
            &td,
            0,
            -libc::EINVAL,
            "FDA whose parent is a binder object",
        )?;
        let mut p = Payload::new();
        p.fda(1, 0, 0);
        let (td, _ob) = td_for(&p, &[0]);
        bad_txn_sg(b, &td, 0, -libc::EINVAL, "FDA with no parent at all")?;
        Ok(())
    })
}

// 7.2 upstream Rust: -EPERM (no ACCEPTS_FDS) before the size check
//   (thread.rs:Thread::translate_object, Fda arm); C checks the fd count against the parent first
//   (-EINVAL) (docs/oracle.md)
fn fda_too_many_fds(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let fds = [0u32; 4];
        let mut p = Payload::new();
        p.u64(0);
        p.ptr(fds.as_ptr() as u64, 16, None);
        p.fda(5, 0, 0);
        let (td, _ob) = td_for(&p, &[8, 48]);
        bad_txn_sg(
            b,
            &td,
            16,
            -libc::EINVAL,
            "FDA of 5 fds in a 16-byte parent",
        )?;
        Ok(())
    })
}

// 7.2 upstream Rust: the new thread's extended error has a fresh id
//   (thread.rs:InnerThread::new); C id 0 (docs/oracle.md)
fn ioctl_after_thread_exit(c: &Ctx) -> TResult {
    with_std(c, |b| {
        b.transact(99, 1, 0, &Payload::new())?;
        expect_br(b, BR_FAILED_REPLY, "call to handle 99")?;
        expect_ok(b.thread_exit(), "BINDER_THREAD_EXIT")?;
        // A new binder_thread: the extended error of the old one is gone.
        let e = ext_err(b)?;
        ensure_eq!(
            e,
            binder_extended_error {
                id: 0,
                command: BR_OK,
                param: 0
            },
            "extended error"
        );
        still_works(b)?;
        Ok(())
    })
}

fn reply_after_thread_exit(c: &Ctx) -> TResult {
    // The server exits its thread while holding a call: the caller gets BR_DEAD_REPLY,
    // and a BC_REPLY from the new thread of the same task has no transaction.
    let res = harness::Pipe::new()?;
    let srv = spawn_ctxmgr(c, |b, rec| {
        if rec.td.code != 1 {
            return std_handler(b, rec);
        }
        b.thread_exit().map_err(|e| e.to_string())?;
        let mut w = WriteBuf::new();
        w.reply(0, &Payload::from_bytes(b"late"));
        b.write(&w).map_err(|e| e.to_string())?;
        let r = b.next()?;
        let _ = res.send_u64(r.code() as u64);
        b.enter_looper().map_err(|e| e.to_string())?;
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    b.transact(0, 1, 0, &Payload::new())?;
    let v = b.collect_until(&[BR_DEAD_REPLY, BR_REPLY, BR_FAILED_REPLY])?;
    ensure!(
        v == vec![Return::TransactionComplete, Return::DeadReply],
        "caller of a thread that exited: expected [BR_TRANSACTION_COMPLETE, BR_DEAD_REPLY], got {}",
        names(&v)
    );
    let code = res.recv_u64()? as u32;
    ensure!(
        code == BR_FAILED_REPLY,
        "BC_REPLY after BINDER_THREAD_EXIT: expected BR_FAILED_REPLY, got {}",
        br_name(code).unwrap_or("?")
    );
    still_works(&b)?;
    srv.kill();
    Ok(())
}

fn free_buffer_after_thread_exit(c: &Ctx) -> TResult {
    // Buffers belong to the process, not the thread: freeing after THREAD_EXIT works.
    with_std(c, |b| {
        let r = b.call_nofree(0, CODE_ECHO, &pattern(100, 9))?;
        b.thread_exit()?;
        expect_ok(
            b.free_buffer(r.td.buffer),
            "BC_FREE_BUFFER after THREAD_EXIT",
        )?;
        // The buffer space is reusable: a large call that needs it succeeds.
        let big = pattern(binder_uapi::binder::DEFAULT_MAP_SIZE - 4096, 1);
        let r = b.call(0, CODE_ECHO, &big)?;
        ensure!(r.data.len() == big.data.len(), "large call after freeing");
        Ok(())
    })
}

fn free_buffer_not_yet_delivered(c: &Ctx) -> TResult {
    // A buffer allocated for a transaction the receiver has not read yet cannot be freed
    // by guessing its address (the first buffer of a fresh mapping is at its start).
    let ready = harness::Pipe::new()?;
    let sent = harness::Pipe::new()?;
    let res = harness::Pipe::new()?;
    let dev = c.dev.clone();
    let srv = harness::fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr()?;
        ready.send_u64(1)?;
        sent.recv_u64()?;
        expect_ok(
            b.free_buffer(b.map_addr()),
            "BC_FREE_BUFFER of an undelivered buffer",
        )?;
        b.enter_looper()?;
        let t = b.recv_txn()?;
        ensure_eq!(t.td.buffer, b.map_addr(), "buffer address");
        ensure_eq!(
            t.data,
            b"undelivered".to_vec(),
            "data after the premature free"
        );
        expect_ok(b.free_buffer(t.td.buffer), "BC_FREE_BUFFER after delivery")?;
        res.send_u64(1)?;
        Ok(())
    })?;
    ready.recv_u64()?;
    let b = client(c)?;
    b.transact(0, 1, TF_ONE_WAY, &Payload::from_bytes(b"undelivered"))?;
    b.expect(BR_TRANSACTION_COMPLETE)?;
    sent.send_u64(1)?;
    res.recv_u64()?;
    srv.join()
}

// 7.2 upstream Rust: Rust bounds every command payload by write_size (UserSliceReader in
//   thread.rs:Thread::write) -> EFAULT; C reads past write_size incidentally (docs/oracle.md)
fn command_overruns_write_size(c: &Ctx) -> TResult {
    // The C driver reads a command's payload past write_size (it only checks that the
    // command code starts inside the buffer) and reports write_consumed beyond it.
    with_std(c, |b| {
        let mut w = WriteBuf::new();
        w.increfs(0).acquire(0);
        let mut bwr = binder_write_read {
            write_size: 15,
            write_buffer: w.as_slice().as_ptr() as u64,
            ..Default::default()
        };
        expect_ok(
            b.write_read_raw(&mut bwr),
            "BC_INCREFS + BC_ACQUIRE with write_size 15 of 16",
        )?;
        ensure_eq!(bwr.write_consumed, 16, "write_consumed");
        // Both took effect: the ref to handle 0 is strong, so it can be passed on.
        let mut p = Payload::new();
        p.handle(0);
        b.call(0, CODE_ECHO, &p)?;
        Ok(())
    })
}
