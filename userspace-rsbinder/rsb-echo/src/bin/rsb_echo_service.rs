//! The echo service: registers SERVICE_NAME with the service manager of
//! binderfs device NAME and serves IEcho until killed.
//!
//!   rsb_echo_service NAME
use rsb_echo::{device_path, BnEcho, ICallback, IEcho, SERVICE_NAME};
use rsbinder::{hub, BinderResult, Interface, ProcessState, Strong};

struct Echo;

impl Interface for Echo {}

impl IEcho for Echo {
    fn echo(&self, msg: &str) -> BinderResult<String> {
        Ok(msg.to_owned())
    }

    fn callBack(&self, cb: &Strong<dyn ICallback>, msg: &str) -> BinderResult<String> {
        cb.ping(msg)
    }

    fn getPid(&self) -> BinderResult<i32> {
        Ok(std::process::id() as i32)
    }
}

fn main() {
    let Some(name) = std::env::args().nth(1) else {
        eprintln!("usage: rsb_echo_service DEVICE_NAME");
        std::process::exit(2);
    };
    let path = device_path(&name);
    if let Err(e) = ProcessState::init(&path, 4) {
        eprintln!("rsb_echo_service: ProcessState::init({path}): {e}");
        std::process::exit(1);
    }
    ProcessState::start_thread_pool();
    let service = BnEcho::new_binder(Echo);
    if let Err(e) = hub::add_service(SERVICE_NAME, service.as_binder()) {
        eprintln!("rsb_echo_service: add_service({SERVICE_NAME}): {e:?}");
        std::process::exit(1);
    }
    eprintln!("rsb_echo_service: {SERVICE_NAME} registered on {path}");
    if let Err(e) = ProcessState::join_thread_pool() {
        eprintln!("rsb_echo_service: join_thread_pool: {e:?}");
        std::process::exit(1);
    }
}
