//! The client half of the binder-rsbinder ptest.
//!
//!   rsb_echo_client mkdev NAME           add binderfs device NAME via binder-control
//!   rsb_echo_client run NAME SERVICE_PID the cases, against the echo service
//!
//! `run` prints one `PASS: rsbinder::<case>` / `FAIL: rsbinder::<case>` line
//! per case, with `# reason` lines before a FAIL. Every case runs on a thread
//! of its own with a deadline: a case that does not return in time is a FAIL,
//! and the cases after it are not run (FAIL too), since the binder state of
//! the process is then unknown.
use rsb_echo::{device_path, BnCallback, ICallback, IEcho, SERVICE_NAME};
use rsbinder::{hub, BinderResult, DeathRecipient, Interface, ProcessState, Strong, WIBinder};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CASE_TIMEOUT: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(100);

type CaseResult = Result<(), String>;

/// What the cases hand on to the ones after them.
#[derive(Default)]
struct State {
    echo: Option<Strong<dyn IEcho>>,
}

struct Pinger {
    calls: Arc<AtomicUsize>,
}

impl Interface for Pinger {}

impl ICallback for Pinger {
    fn ping(&self, msg: &str) -> BinderResult<String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(format!("pong:{msg}"))
    }
}

struct Obituary(Mutex<mpsc::Sender<()>>);

impl DeathRecipient for Obituary {
    fn binder_died(&self, _who: &WIBinder) {
        let _ = self.0.lock().map(|tx| tx.send(()));
    }
}

/// Polls `f` until it returns Some or `limit` passes.
fn poll<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

fn echo_of(state: &Mutex<State>) -> Result<Strong<dyn IEcho>, String> {
    state
        .lock()
        .map_err(|_| "state poisoned".to_owned())?
        .echo
        .clone()
        .ok_or_else(|| "no IEcho proxy (lookup failed)".to_owned())
}

fn case_register(_: &Mutex<State>, _: i32) -> CaseResult {
    let sm = hub::default().map_err(|e| format!("hub::default(): {e:?}"))?;
    poll(Duration::from_secs(10), || sm.check_service(SERVICE_NAME))
        .ok_or_else(|| format!("{SERVICE_NAME} not registered with the hub after 10 s"))?;
    let names = sm.list_services(hub::DUMP_FLAG_PRIORITY_ALL);
    if !names.iter().any(|n| n == SERVICE_NAME) {
        return Err(format!("list_services does not name {SERVICE_NAME}: {names:?}"));
    }
    Ok(())
}

fn case_lookup(state: &Mutex<State>, _: i32) -> CaseResult {
    let sm = hub::default().map_err(|e| format!("hub::default(): {e:?}"))?;
    let echo: Strong<dyn IEcho> = sm
        .try_get_interface(SERVICE_NAME)
        .map_err(|e| format!("try_get_interface::<dyn IEcho>({SERVICE_NAME}): {e:?}"))?
        .ok_or_else(|| format!("getService({SERVICE_NAME}) found nothing"))?;
    if echo.as_binder().as_proxy().is_none() {
        return Err("the IEcho binder is not a proxy".into());
    }
    state.lock().map_err(|_| "state poisoned")?.echo = Some(echo);
    Ok(())
}

fn case_echo(state: &Mutex<State>, _: i32) -> CaseResult {
    let echo = echo_of(state)?;
    let big: String = (0..16 * 1024).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    for msg in ["hello, binder", "", "ünïcödé ✓", big.as_str()] {
        let got = echo.echo(msg).map_err(|e| format!("echo: {e:?}"))?;
        if got != msg {
            return Err(format!(
                "echo of {} bytes returned {} bytes{}",
                msg.len(),
                got.len(),
                if msg.len() < 64 { format!(": {got:?} != {msg:?}") } else { String::new() }
            ));
        }
    }
    Ok(())
}

fn case_callback(state: &Mutex<State>, _: i32) -> CaseResult {
    let echo = echo_of(state)?;
    let calls = Arc::new(AtomicUsize::new(0));
    let cb = BnCallback::new_binder(Pinger { calls: calls.clone() });
    for i in 0..3 {
        let msg = format!("ping {i}");
        let got = echo.callBack(&cb, &msg).map_err(|e| format!("callBack: {e:?}"))?;
        if got != format!("pong:{msg}") {
            return Err(format!("callBack({msg:?}) returned {got:?}"));
        }
    }
    let n = calls.load(Ordering::SeqCst);
    if n != 3 {
        return Err(format!("the callback ran {n} times, not 3"));
    }
    Ok(())
}

fn case_death(state: &Mutex<State>, pid: i32) -> CaseResult {
    let echo = echo_of(state)?;
    let got = echo.getPid().map_err(|e| format!("getPid: {e:?}"))?;
    if got != pid {
        return Err(format!("the service says its pid is {got}, run-ptest started {pid}"));
    }
    let (tx, rx) = mpsc::channel();
    let obituary = Arc::new(Obituary(Mutex::new(tx)));
    echo.as_binder()
        .link_to_death_arc(&obituary)
        .map_err(|e| format!("link_to_death: {e:?}"))?;
    // SAFETY: kill(2) with a pid and a signal number has no memory effects.
    if unsafe { libc::kill(pid, libc::SIGKILL) } != 0 {
        return Err(format!("kill -9 {pid}: {}", std::io::Error::last_os_error()));
    }
    rx.recv_timeout(Duration::from_secs(10))
        .map_err(|_| "no death notification within 10 s of kill -9".to_owned())?;
    if echo.echo("after death").is_ok() {
        return Err("a call to the dead service succeeded".into());
    }
    Ok(())
}

fn case_hub_forgets(_: &Mutex<State>, _: i32) -> CaseResult {
    let sm = hub::default().map_err(|e| format!("hub::default(): {e:?}"))?;
    poll(Duration::from_secs(10), || sm.check_service(SERVICE_NAME).is_none().then_some(()))
        .ok_or_else(|| format!("the hub still lists the dead {SERVICE_NAME} after 10 s"))
}

type Case = fn(&Mutex<State>, i32) -> CaseResult;

const CASES: &[(&str, Case)] = &[
    ("register", case_register),
    ("lookup", case_lookup),
    ("echo", case_echo),
    ("callback", case_callback),
    ("death", case_death),
    ("hub_forgets", case_hub_forgets),
];

fn run(name: &str, pid: i32) -> i32 {
    let path = device_path(name);
    if let Err(e) = ProcessState::init(&path, 2) {
        println!("# ProcessState::init({path}): {e}");
        for (case, _) in CASES {
            println!("FAIL: rsbinder::{case}");
        }
        return 1;
    }
    ProcessState::start_thread_pool();
    let state = Arc::new(Mutex::new(State::default()));
    let mut failed = 0;
    let mut hung: Option<&str> = None;
    for (case, f) in CASES {
        if let Some(h) = hung {
            println!("# not run: {h} hung");
            println!("FAIL: rsbinder::{case}");
            failed += 1;
            continue;
        }
        let (tx, rx) = mpsc::channel();
        let (st, f) = (state.clone(), *f);
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&st, pid)))
                .unwrap_or_else(|_| Err("panicked".into()));
            let _ = tx.send(r);
        });
        match rx.recv_timeout(CASE_TIMEOUT) {
            Ok(Ok(())) => println!("PASS: rsbinder::{case}"),
            Ok(Err(reason)) => {
                println!("# {reason}");
                println!("FAIL: rsbinder::{case}");
                failed += 1;
            }
            Err(_) => {
                println!("# timed out after {} s", CASE_TIMEOUT.as_secs());
                println!("FAIL: rsbinder::{case}");
                failed += 1;
                hung = Some(case);
            }
        }
    }
    // A hung case thread cannot be joined: leave without unwinding it.
    let code = i32::from(failed > 0);
    if hung.is_some() {
        std::process::exit(code);
    }
    code
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["mkdev", name] => {
            let control = Path::new(rsbinder::DEFAULT_BINDER_CONTROL_PATH);
            match rsbinder::binderfs::add_device(control, name) {
                Ok((major, minor)) => {
                    println!("{major}:{minor}");
                    0
                }
                Err(e) => {
                    eprintln!("rsb_echo_client: add_device({name}): {e}");
                    1
                }
            }
        }
        ["run", name, pid] => match pid.parse() {
            Ok(pid) => run(name, pid),
            Err(_) => 2,
        },
        _ => {
            eprintln!("usage: rsb_echo_client mkdev NAME | run NAME SERVICE_PID");
            2
        }
    };
    std::process::exit(code);
}
