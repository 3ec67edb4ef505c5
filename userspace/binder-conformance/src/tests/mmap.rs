//! mmap: the buffer mapping's rules (read-only, once, not inherited, size cap) and what
//! happens to transactions when the receiver has no usable mapping.

use crate::common::*;
use crate::Ctx;
use binder_uapi::harness::{fork_proc, Pipe, Proc};
use binder_uapi::*;

crate::tests!(
    "mmap",
    map_twice_ebusy,
    map_writable_eperm,
    map_shared_writable_eperm,
    map_shared_readonly_ok,
    mprotect_write_eacces,
    map_from_other_process_einval,
    mapping_not_inherited_by_fork,
    larger_than_4m_capped,
    one_page_mapping,
    receiver_without_mapping_dead_reply,
    receiver_unmapped_dead_reply,
    unallocated_page_sigbus,
);

const MB: usize = 1024 * 1024;

fn map_twice_ebusy(c: &Ctx) -> TResult {
    let b = client(c)?;
    expect_errno(
        b.mmap_raw(4096, libc::PROT_READ, libc::MAP_PRIVATE),
        libc::EBUSY,
        "second mmap",
    )?;
    Ok(())
}

fn map_writable_eperm(c: &Ctx) -> TResult {
    let mut b = Binder::open(&c.dev)?;
    expect_errno(
        b.mmap_raw(MB, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE),
        libc::EPERM,
        "mmap PROT_WRITE",
    )?;
    // The refused mapping did not count: a read-only one still works.
    expect_ok(b.mmap(MB), "read-only mmap afterwards")?;
    Ok(())
}

fn map_shared_writable_eperm(c: &Ctx) -> TResult {
    let b = Binder::open(&c.dev)?;
    expect_errno(
        b.mmap_raw(MB, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED),
        libc::EPERM,
        "mmap MAP_SHARED PROT_WRITE",
    )
}

fn map_shared_readonly_ok(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = Binder::open(&c.dev)?;
    let addr = expect_ok(
        b.mmap_raw(MB, libc::PROT_READ, libc::MAP_SHARED),
        "mmap MAP_SHARED PROT_READ",
    )?;
    // Use it: a reply lands inside it.
    b.transact(0, CODE_ECHO, 0, &Payload::from_bytes(b"shared"))?;
    let v = b.collect_until(&[BR_REPLY])?;
    let td = *v.last().unwrap().txn().unwrap();
    ensure!(
        td.buffer >= addr as u64 && td.buffer < (addr + MB) as u64,
        "reply buffer {:#x} not in the shared mapping",
        td.buffer
    );
    b.free_buffer(td.buffer)?;
    srv.kill();
    Ok(())
}

fn mprotect_write_eacces(c: &Ctx) -> TResult {
    let b = client(c)?;
    // SAFETY: mprotect on our own mapping (it fails).
    let r = unsafe {
        libc::mprotect(
            b.map_addr() as *mut libc::c_void,
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
        )
    };
    let e = if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    };
    expect_errno(
        e,
        libc::EACCES,
        "mprotect(PROT_WRITE) on the binder mapping",
    )
}

fn map_from_other_process_einval(c: &Ctx) -> TResult {
    let b = Binder::open(&c.dev)?;
    let bref = &b;
    let child = fork_proc(move || {
        expect_errno(
            bref.mmap_raw(MB, libc::PROT_READ, libc::MAP_PRIVATE),
            libc::EINVAL,
            "mmap of an fd opened by the parent",
        )
    })?;
    child.join()?;
    // The opener can still map it.
    let mut b = b;
    expect_ok(b.mmap(MB), "mmap by the opener")?;
    Ok(())
}

fn mapping_not_inherited_by_fork(c: &Ctx) -> TResult {
    let b = client(c)?;
    let addr = b.map_addr() as usize;
    let child = fork_proc(move || {
        // SAFETY: msync only probes whether the range is mapped.
        let r = unsafe { libc::msync(addr as *mut libc::c_void, 4096, libc::MS_ASYNC) };
        let e = if r < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        };
        expect_errno(
            e,
            libc::ENOMEM,
            "msync on the parent's binder mapping in a child",
        )
    })?;
    child.join()
}

fn larger_than_4m_capped(c: &Ctx) -> TResult {
    // The driver uses at most 4 MiB of a larger mapping.
    let ready = Pipe::new()?;
    let dev = c.dev.clone();
    let srv = fork_proc(|| {
        let mut b = Binder::open(&dev)?;
        b.mmap(8 * MB)?;
        b.set_context_mgr()?;
        b.enter_looper()?;
        ready.send_u64(1)?;
        serve_loop(&b, |_, rec| {
            let mut p = Payload::new();
            p.u64(rec.td.data_size);
            Ok(Step::Reply(p))
        })
    })?;
    ready.recv_u64()?;
    let b = client(c)?;
    let big = pattern(4 * MB + 4096, 1);
    let mut w = WriteBuf::new();
    w.transaction(0, 1, 0, &big);
    expect_txn_error(
        &b,
        &w,
        BR_FAILED_REPLY,
        "4 MiB + 4 KiB into an 8 MiB mapping",
    )?;
    expect_ext_err(
        &b,
        BR_FAILED_REPLY,
        -libc::ENOSPC,
        "4 MiB + 4 KiB into an 8 MiB mapping",
    )?;
    let ok = pattern(3 * MB, 2);
    let r = b.call(0, 1, &ok)?;
    ensure_eq!(r.data, (3 * MB as u64).to_ne_bytes().to_vec(), "3 MiB call");
    srv.kill();
    Ok(())
}

fn one_page_mapping(c: &Ctx) -> TResult {
    let ready = Pipe::new()?;
    let dev = c.dev.clone();
    let srv = fork_proc(|| {
        let mut b = Binder::open(&dev)?;
        b.mmap(4096)?;
        b.set_context_mgr()?;
        b.enter_looper()?;
        ready.send_u64(1)?;
        serve_loop(&b, |_, _| Ok(Step::Reply(Payload::new())))
    })?;
    ready.recv_u64()?;
    let b = client(c)?;
    b.call(0, 1, &pattern(100, 0))?;
    b.call(0, 1, &pattern(4096, 0))?;
    let mut w = WriteBuf::new();
    w.transaction(0, 1, 0, &pattern(4097, 0));
    expect_txn_error(
        &b,
        &w,
        BR_FAILED_REPLY,
        "4097 bytes into a one-page mapping",
    )?;
    expect_ext_err(
        &b,
        BR_FAILED_REPLY,
        -libc::ENOSPC,
        "4097 bytes into a one-page mapping",
    )?;
    srv.kill();
    Ok(())
}

/// Fork a context manager that opens the device without the usual mapping, runs `setup`,
/// registers, and then never reads (for one minute). Returns once it is registered.
fn spawn_idle_mgr<S>(c: &Ctx, setup: S) -> TResult<Proc>
where
    S: FnOnce(&Binder) -> TResult,
{
    let ready = Pipe::new()?;
    let dev = c.dev.clone();
    let srv = fork_proc(|| {
        let b = Binder::open(&dev)?;
        setup(&b)?;
        b.set_context_mgr()?;
        ready.send_u64(1)?;
        harness::sleep_ms(60_000);
        Ok(())
    })?;
    ready.recv_u64()?;
    Ok(srv)
}

// 7.2 upstream Rust: BR_DEAD_REPLY without an errno source leaves the extended error at (BR_OK,
//   0) (process.rs:buffer_alloc, thread.rs:Thread::transaction); C sets (BR_DEAD_REPLY, -ESRCH)
//   (docs/oracle.md)
fn receiver_without_mapping_dead_reply(c: &Ctx) -> TResult {
    let srv = spawn_idle_mgr(c, |_| Ok(()))?;
    let b = client(c)?;
    for flags in [0, TF_ONE_WAY] {
        let mut w = WriteBuf::new();
        w.transaction(0, 1, flags, &Payload::from_bytes(b"x"));
        expect_txn_error(
            &b,
            &w,
            BR_DEAD_REPLY,
            &format!("flags {flags:#x} to an unmapped receiver"),
        )?;
        expect_ext_err(&b, BR_DEAD_REPLY, -libc::ESRCH, "unmapped receiver")?;
    }
    srv.kill();
    Ok(())
}

// 7.2 upstream Rust: no vma-close hook: munmap is only noticed when a page is inserted
//   (page_range.rs:use_page_slow, plain ESRCH) -> BR_FAILED_REPLY; C clears alloc->vma on close
//   -> BR_DEAD_REPLY (docs/oracle.md)
fn receiver_unmapped_dead_reply(c: &Ctx) -> TResult {
    let srv = spawn_idle_mgr(c, |b| {
        let addr = b.mmap_raw(MB, libc::PROT_READ, libc::MAP_PRIVATE)?;
        // SAFETY: unmapping the mapping we just made.
        unsafe { libc::munmap(addr as *mut libc::c_void, MB) };
        Ok(())
    })?;
    let b = client(c)?;
    let mut w = WriteBuf::new();
    w.transaction(0, 1, 0, &Payload::from_bytes(b"x"));
    expect_txn_error(
        &b,
        &w,
        BR_DEAD_REPLY,
        "call to a receiver that unmapped its buffer",
    )?;
    expect_ext_err(
        &b,
        BR_DEAD_REPLY,
        -libc::ESRCH,
        "receiver that unmapped its buffer",
    )?;
    srv.kill();
    Ok(())
}

fn unallocated_page_sigbus(c: &Ctx) -> TResult {
    // Pages of the mapping that hold no buffer are not populated: touching one is SIGBUS.
    let dev = c.dev.clone();
    // SAFETY: fork; the child only opens, maps, touches memory and exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        fail!("fork: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        if let Ok(b) = Binder::open_mapped(&dev) {
            let p = b.map_addr() as *const u8;
            // SAFETY: deliberately touching an unpopulated page of the binder mapping.
            unsafe { core::ptr::read_volatile(p.add(8192)) };
            // SAFETY: child exit.
            unsafe { libc::_exit(3) };
        }
        // SAFETY: child exit.
        unsafe { libc::_exit(4) };
    }
    let mut st = 0;
    // SAFETY: waiting for our child.
    unsafe { libc::waitpid(pid, &mut st, 0) };
    ensure!(
        libc::WIFSIGNALED(st) && libc::WTERMSIG(st) == libc::SIGBUS,
        "child touching an unallocated page: wait status {st:#x}, expected SIGBUS \
         (exit 3 = the read succeeded, 4 = open/mmap failed)"
    );
    Ok(())
}
