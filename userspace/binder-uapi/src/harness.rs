//! Helpers to run a test across processes and threads: forked children that report a
//! result through a pipe, coordination pipes, and timeouts so a hang is a failure.

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Why a test did not pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TestErr {
    Fail(String),
    Skip(String),
}

pub type TResult<T = ()> = Result<T, TestErr>;

impl From<String> for TestErr {
    fn from(s: String) -> Self {
        TestErr::Fail(s)
    }
}
impl From<&str> for TestErr {
    fn from(s: &str) -> Self {
        TestErr::Fail(s.to_string())
    }
}
impl From<io::Error> for TestErr {
    fn from(e: io::Error) -> Self {
        TestErr::Fail(format!("unexpected I/O error: {e}"))
    }
}

/// Fail with a formatted message.
#[macro_export]
macro_rules! fail {
    ($($t:tt)*) => { return Err($crate::harness::TestErr::Fail(format!($($t)*))) };
}

/// Skip with a formatted reason.
#[macro_export]
macro_rules! skip {
    ($($t:tt)*) => { return Err($crate::harness::TestErr::Skip(format!($($t)*))) };
}

/// Fail unless `cond`.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($t:tt)*) => {
        if !$cond { $crate::fail!($($t)*); }
    };
}

/// Fail unless `a == b`, printing both.
#[macro_export]
macro_rules! ensure_eq {
    ($a:expr, $b:expr, $what:expr) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            $crate::fail!("{}: expected {:?}, got {:?}", $what, b, a);
        }
    }};
}

/// Outcome of one isolated run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail(String),
    Skip(String),
}

fn encode(r: &TResult) -> Vec<u8> {
    match r {
        Ok(()) => b"P".to_vec(),
        Err(TestErr::Fail(m)) => [b"F", m.as_bytes()].concat(),
        Err(TestErr::Skip(m)) => [b"S", m.as_bytes()].concat(),
    }
}

fn decode_result(b: &[u8]) -> Option<TResult> {
    let (k, m) = b.split_first()?;
    let m = String::from_utf8_lossy(m).into_owned();
    match k {
        b'P' => Some(Ok(())),
        b'F' => Some(Err(TestErr::Fail(m))),
        b'S' => Some(Err(TestErr::Skip(m))),
        _ => None,
    }
}

/// A unidirectional pipe (both ends open until `close_*`).
pub struct Pipe {
    pub r: RawFd,
    pub w: RawFd,
}

impl Pipe {
    pub fn new() -> io::Result<Pipe> {
        let mut fds = [0; 2];
        // SAFETY: fds has room for two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Pipe {
            r: fds[0],
            w: fds[1],
        })
    }
    pub fn close_read(&mut self) {
        if self.r >= 0 {
            // SAFETY: our fd.
            unsafe { libc::close(self.r) };
            self.r = -1;
        }
    }
    pub fn close_write(&mut self) {
        if self.w >= 0 {
            // SAFETY: our fd.
            unsafe { libc::close(self.w) };
            self.w = -1;
        }
    }
    pub fn send(&self, b: &[u8]) -> io::Result<()> {
        let mut off = 0;
        while off < b.len() {
            // SAFETY: valid slice.
            let n = unsafe { libc::write(self.w, b[off..].as_ptr() as *const _, b.len() - off) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(e);
            }
            off += n as usize;
        }
        Ok(())
    }
    pub fn send_u64(&self, v: u64) -> io::Result<()> {
        self.send(&v.to_ne_bytes())
    }
    /// Read exactly `n` bytes within `timeout`; EOF or timeout is an error.
    pub fn recv_exact(&self, n: usize, timeout: Duration) -> io::Result<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        let mut out = vec![0u8; n];
        let mut off = 0;
        while off < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if !wait_readable(self.r, left)? {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "pipe read timed out",
                ));
            }
            // SAFETY: valid buffer.
            let r = unsafe { libc::read(self.r, out[off..].as_mut_ptr() as *mut _, n - off) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(e);
            }
            if r == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "pipe closed"));
            }
            off += r as usize;
        }
        Ok(out)
    }
    /// Receive a u64 within 10 s (the usual "step done" signal between processes).
    pub fn recv_u64(&self) -> Result<u64, String> {
        self.recv_u64_within(Duration::from_secs(10))
    }
    pub fn recv_u64_within(&self, t: Duration) -> Result<u64, String> {
        let b = self
            .recv_exact(8, t)
            .map_err(|e| format!("waiting for peer process: {e}"))?;
        Ok(u64::from_ne_bytes(b.try_into().unwrap()))
    }
    /// Read until EOF (within `timeout`).
    pub fn recv_all(&self, timeout: Duration) -> io::Result<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if !wait_readable(self.r, left)? {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"));
            }
            // SAFETY: valid buffer.
            let r = unsafe { libc::read(self.r, buf.as_mut_ptr() as *mut _, buf.len()) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(e);
            }
            if r == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..r as usize]);
        }
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        self.close_read();
        self.close_write();
    }
}

/// Non-blocking waitpid: Some(status) once `pid` has exited.
fn try_reap(pid: i32) -> Option<i32> {
    let mut st = 0;
    // SAFETY: waitpid on our own child.
    let r = unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) };
    if r == pid {
        Some(st)
    } else {
        None
    }
}

/// SIGKILL `target` (a pid, or -pgid) and reap `pid`, waiting at most 5 s: a process
/// stuck in the kernel cannot hold up the suite. None if it could not be reaped.
fn kill_and_wait(target: i32, pid: i32) -> Option<i32> {
    // SAFETY: signalling our own child / process group.
    unsafe { libc::kill(target, libc::SIGKILL) };
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(st) = try_reap(pid) {
            return Some(st);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Read a child's result message: everything written to `pipe` until EOF, or until the
/// child `pid` exited (helpers it forked may still hold the pipe open). Returns the
/// bytes and the exit status if the child was reaped; an error on timeout.
fn recv_result(pipe: &Pipe, pid: i32, timeout: Duration) -> io::Result<(Vec<u8>, Option<i32>)> {
    let deadline = Instant::now() + timeout;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let mut status = None;
    loop {
        let ready = wait_readable(pipe.r, Duration::from_millis(50))?;
        if ready {
            // SAFETY: valid buffer.
            let r = unsafe { libc::read(pipe.r, buf.as_mut_ptr() as *mut _, buf.len()) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(e);
            }
            if r == 0 {
                return Ok((out, status));
            }
            out.extend_from_slice(&buf[..r as usize]);
            continue;
        }
        if status.is_some() {
            // Exited and nothing more to read.
            return Ok((out, status));
        }
        if let Some(st) = try_reap(pid) {
            status = Some(st);
            continue; // drain what it wrote before exiting
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"));
        }
    }
}

fn wait_readable(fd: RawFd, t: Duration) -> io::Result<bool> {
    let deadline = Instant::now() + t;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ms = left.as_millis().min(i32::MAX as u128) as i32;
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd.
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        return Ok(r > 0);
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

/// Silence the default panic printer (panics become FAIL messages instead).
pub fn quiet_panics() {
    std::panic::set_hook(Box::new(|_| {}));
}

fn run_catching<F: FnOnce() -> TResult>(f: F) -> TResult {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(TestErr::Fail(format!("panicked: {}", panic_message(&*p)))),
    }
}

/// A forked child process running a closure; its result comes back through a pipe.
pub struct Proc {
    pub pid: i32,
    result: Pipe,
    reaped: bool,
}

/// Fork; the child runs `f` and exits, the parent gets a handle. The child inherits every
/// open fd (close what must not be shared inside `f`).
pub fn fork_proc<F: FnOnce() -> TResult>(f: F) -> io::Result<Proc> {
    let mut pipe = Pipe::new()?;
    // SAFETY: fork; the child only runs `f` and then `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        pipe.close_read();
        let r = run_catching(f);
        let _ = pipe.send(&encode(&r));
        // SAFETY: terminate the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    pipe.close_write();
    Ok(Proc {
        pid,
        result: pipe,
        reaped: false,
    })
}

impl Proc {
    /// Wait for the child's result (and exit) within `timeout`. On timeout the child is
    /// killed and the result is a failure.
    pub fn join_within(mut self, timeout: Duration) -> TResult {
        let res = recv_result(&self.result, self.pid, timeout);
        match res {
            Ok((b, st)) => {
                if st.is_some() {
                    self.reaped = true;
                }
                let st = st.unwrap_or_else(|| self.kill_and_reap());
                match decode_result(&b) {
                    Some(r) => r,
                    None => Err(TestErr::Fail(format!(
                        "child {} died without reporting a result ({})",
                        self.pid,
                        describe_status(st)
                    ))),
                }
            }
            Err(_) => {
                self.kill_and_reap();
                Err(TestErr::Fail(format!(
                    "child {} did not finish within {:?}",
                    self.pid, timeout
                )))
            }
        }
    }
    pub fn join(self) -> TResult {
        self.join_within(Duration::from_secs(15))
    }
    /// SIGKILL the child and reap it; returns the wait status.
    pub fn kill_and_reap(&mut self) -> i32 {
        if self.reaped {
            return 0;
        }
        self.reaped = true;
        if let Some(st) = try_reap(self.pid) {
            return st;
        }
        kill_and_wait(self.pid, self.pid).unwrap_or(-1)
    }
    /// Kill the child and wait until it is gone (its binder fds released by the kernel).
    pub fn kill(mut self) {
        self.kill_and_reap();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

fn describe_status(st: i32) -> String {
    if libc::WIFSIGNALED(st) {
        format!("killed by signal {}", libc::WTERMSIG(st))
    } else if libc::WIFEXITED(st) {
        format!("exit status {}", libc::WEXITSTATUS(st))
    } else {
        format!("wait status {st:#x}")
    }
}

/// Run `f` in a forked child in its own process group, with `timeout`. Anything the test
/// leaves behind in that group is killed afterwards. A hang, crash or panic is a failure.
pub fn run_isolated<F: FnOnce() -> TResult>(timeout: Duration, f: F) -> Outcome {
    let mut pipe = match Pipe::new() {
        Ok(p) => p,
        Err(e) => return Outcome::Fail(format!("pipe: {e}")),
    };
    // SAFETY: fork; the child runs the test and `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Outcome::Fail(format!("fork: {}", io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: setpgid/_exit in the child.
        unsafe { libc::setpgid(0, 0) };
        pipe.close_read();
        let r = run_catching(f);
        let _ = pipe.send(&encode(&r));
        unsafe { libc::_exit(0) };
    }
    // SAFETY: also set it from the parent to avoid the race with the child's setpgid.
    unsafe { libc::setpgid(pid, pid) };
    pipe.close_write();
    let res = recv_result(&pipe, pid, timeout);
    // Kill the whole group (the test's helper processes too), then reap the test.
    let st = match &res {
        Ok((_, Some(st))) => {
            // SAFETY: signalling our own process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            Some(*st)
        }
        _ => kill_and_wait(-pid, pid),
    };
    match res {
        Ok((b, _)) => match decode_result(&b) {
            Some(Ok(())) => Outcome::Pass,
            Some(Err(TestErr::Fail(m))) => Outcome::Fail(m),
            Some(Err(TestErr::Skip(m))) => Outcome::Skip(m),
            None => Outcome::Fail(format!(
                "test process died without a result ({})",
                st.map(describe_status)
                    .unwrap_or_else(|| "unkillable".to_string())
            )),
        },
        Err(e) if e.kind() == io::ErrorKind::TimedOut => Outcome::Fail(format!(
            "timed out after {} s (hang){}",
            timeout.as_secs(),
            if st.is_none() {
                "; the test process could not be killed (stuck in the kernel?)"
            } else {
                ""
            }
        )),
        Err(e) => Outcome::Fail(format!("reading the test result: {e}")),
    }
}

/// A new anonymous mapping of `len` bytes, read-write and shared with the processes
/// forked after it (MAP_SHARED | MAP_ANONYMOUS): zero-filled and page-aligned, for the
/// counters or futex words of processes that a test forks. The caller owns it: it
/// munmaps it, or keeps it for the rest of the process.
pub fn map_shared(len: usize) -> io::Result<*mut libc::c_void> {
    // SAFETY: a new mapping at an address the kernel chooses; it aliases nothing.
    let m = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if m == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(m)
}

/// Sleep helper.
pub fn sleep_ms(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

/// getpid().
pub fn getpid() -> i32 {
    // SAFETY: trivial syscall.
    unsafe { libc::getpid() }
}

/// gettid().
pub fn gettid() -> i32 {
    // SAFETY: trivial syscall.
    unsafe { libc::gettid() }
}

/// geteuid().
pub fn geteuid() -> u32 {
    // SAFETY: trivial syscall.
    unsafe { libc::geteuid() }
}

/// The calling thread's nice value (-20..19). Linux keeps nice per thread.
pub fn nice() -> i32 {
    // The raw syscall returns 20 - nice (1..40), so -1 is unambiguous as an error.
    // SAFETY: trivial syscall on our own thread.
    let r = unsafe {
        libc::syscall(
            libc::SYS_getpriority,
            libc::PRIO_PROCESS as libc::c_int,
            gettid() as libc::c_long,
        )
    };
    if r < 0 {
        panic!("getpriority: {}", io::Error::last_os_error());
    }
    20 - r as i32
}

/// Set the calling thread's nice value (threads forked or spawned afterwards inherit it).
pub fn set_nice(n: i32) -> io::Result<()> {
    // SAFETY: trivial syscall on our own thread.
    let r = unsafe {
        libc::syscall(
            libc::SYS_setpriority,
            libc::PRIO_PROCESS as libc::c_int,
            gettid() as libc::c_long,
            n as libc::c_long,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Run `f` with the calling thread at nice `n` (a process forked or a binder opened
/// meanwhile starts from that value), then put the thread's nice back.
pub fn at_nice<T, F: FnOnce() -> Result<T, String>>(n: i32, f: F) -> Result<T, String> {
    let old = nice();
    set_nice(n).map_err(|e| format!("setpriority({n}): {e}"))?;
    let r = f();
    set_nice(old).map_err(|e| format!("setpriority({old}) back: {e}"))?;
    r
}

/// Become the unprivileged `uid` (gid the same, no supplementary groups, no
/// capabilities left) with RLIMIT_NICE set to `rlimit_nice` (the lowest nice the
/// process may then set itself is 20 - rlimit_nice). Call as root; fds stay open.
pub fn drop_privileges(uid: u32, rlimit_nice: u64) -> io::Result<()> {
    let rl = libc::rlimit {
        rlim_cur: rlimit_nice as libc::rlim_t,
        rlim_max: rlimit_nice as libc::rlim_t,
    };
    // SAFETY: plain syscalls with valid arguments; the wrappers apply them to every
    // thread of the process.
    unsafe {
        if libc::setrlimit(libc::RLIMIT_NICE, &rl) != 0
            || libc::setgroups(0, std::ptr::null()) != 0
            || libc::setresgid(uid, uid, uid) != 0
            || libc::setresuid(uid, uid, uid) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Poll `f` every 20 ms until it returns true or `timeout` passes.
pub fn wait_until<F: FnMut() -> bool>(timeout: Duration, mut f: F) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        sleep_ms(20);
    }
}

/// Poll `left` every 20 ms until it returns `Some(0)`: how much is still outstanding (objects
/// not yet released, say). Waits as long as that keeps going down: gives up once it has not
/// gone down for `stall`, or after `cap` in all, so a slow but steady teardown on a loaded host
/// is waited for and a stuck one is not. `None` (unreadable) counts as no progress. Returns
/// whether it reached 0.
pub fn wait_drained<F: FnMut() -> Option<u64>>(
    stall: Duration,
    cap: Duration,
    mut left: F,
) -> bool {
    let start = Instant::now();
    let mut best = u64::MAX;
    let mut since = start;
    loop {
        match left() {
            Some(0) => return true,
            Some(n) if n < best => {
                best = n;
                since = Instant::now();
            }
            _ => {}
        }
        let now = Instant::now();
        if now.duration_since(since) >= stall || now.duration_since(start) >= cap {
            return false;
        }
        sleep_ms(20);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_drained_waits_for_progress() {
        let mut n = 5u64;
        // Goes down by one a poll: reached although it takes longer than the stall time
        // between the first and the last poll.
        assert!(wait_drained(
            Duration::from_millis(50),
            Duration::from_secs(10),
            || {
                n = n.saturating_sub(1);
                Some(n)
            }
        ));
        // Stuck: gives up after the stall time.
        let t = Instant::now();
        assert!(!wait_drained(
            Duration::from_millis(100),
            Duration::from_secs(10),
            || Some(3)
        ));
        assert!(t.elapsed() >= Duration::from_millis(100) && t.elapsed() < Duration::from_secs(5));
        // Unreadable: no progress either.
        assert!(!wait_drained(
            Duration::from_millis(50),
            Duration::from_secs(10),
            || None
        ));
    }

    #[test]
    fn pass_fail_skip_panic() {
        let t = Duration::from_secs(10);
        assert_eq!(run_isolated(t, || Ok(())), Outcome::Pass);
        assert_eq!(
            run_isolated(t, || Err("no".into())),
            Outcome::Fail("no".into())
        );
        assert_eq!(
            run_isolated(t, || Err(TestErr::Skip("why".into()))),
            Outcome::Skip("why".into())
        );
        match run_isolated(t, || panic!("boom")) {
            Outcome::Fail(m) => assert!(m.contains("boom"), "{m}"),
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn hang_is_a_failure() {
        let t0 = Instant::now();
        match run_isolated(Duration::from_secs(1), || {
            sleep_ms(30_000);
            Ok(())
        }) {
            Outcome::Fail(m) => assert!(m.contains("timed out"), "{m}"),
            o => panic!("{o:?}"),
        }
        assert!(t0.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn leftover_helper_does_not_block() {
        // A helper process that outlives the test keeps the result pipe open; the
        // result still counts as soon as the test process exits.
        let t0 = Instant::now();
        let o = run_isolated(Duration::from_secs(20), || {
            let p = fork_proc(|| {
                sleep_ms(30_000);
                Ok(())
            })?;
            std::mem::forget(p);
            Ok(())
        });
        assert_eq!(o, Outcome::Pass);
        assert!(t0.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn child_results_and_pipes() {
        let p = Pipe::new().unwrap();
        let c = fork_proc(|| {
            p.send_u64(42)?;
            Err("child failed".into())
        })
        .unwrap();
        assert_eq!(p.recv_u64().unwrap(), 42);
        assert_eq!(c.join(), Err(TestErr::Fail("child failed".into())));
        let c = fork_proc(|| unsafe { libc::_exit(7) }).unwrap();
        match c.join() {
            Err(TestErr::Fail(m)) => assert!(m.contains("exit status 7"), "{m}"),
            r => panic!("{r:?}"),
        }
    }
}
