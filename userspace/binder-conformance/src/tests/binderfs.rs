//! binderfs: binder-control and BINDER_CTL_ADD, device nodes, features, instances.

use crate::common::*;
use crate::Ctx;
use binder_uapi::*;
use std::os::unix::fs::{FileTypeExt, MetadataExt};

crate::tests!(
    "binderfs",
    control_is_char_device,
    add_device_fields,
    add_duplicate_eexist,
    add_bad_names_eacces,
    add_max_length_name,
    add_null_ptr_efault,
    control_rejects_other_ioctls,
    unlink_control_eperm,
    rename_control_eperm,
    rename_device_works,
    removed_device_gone,
    open_fd_survives_unlink,
    devices_isolated,
    features_files,
    default_devices,
    new_instance_independent,
);

fn control(c: &Ctx) -> String {
    format!("{}/binder-control", c.mnt)
}

fn unique(tag: &str) -> String {
    format!("bct{}-{tag}", std::process::id())
}

fn control_is_char_device(c: &Ctx) -> TResult {
    let m = std::fs::metadata(control(c))?;
    ensure!(
        m.file_type().is_char_device(),
        "binder-control is not a character device"
    );
    Ok(())
}

fn add_device_fields(c: &Ctx) -> TResult {
    let d = expect_ok(
        binderfs::Device::create(&c.mnt, &unique("fields")),
        "BINDER_CTL_ADD",
    )?;
    let m = std::fs::metadata(d.path())?;
    ensure!(
        m.file_type().is_char_device(),
        "new device is not a character device"
    );
    let rdev = m.rdev();
    ensure_eq!(libc::major(rdev), d.info.major, "major");
    ensure_eq!(libc::minor(rdev), d.info.minor, "minor");
    let b = Binder::open(&d.path())?;
    ensure_eq!(b.version()?, 8, "version on the new device");
    Ok(())
}

fn add_duplicate_eexist(c: &Ctx) -> TResult {
    let name = unique("dup");
    let _d = binderfs::Device::create(&c.mnt, &name)?;
    expect_errno(
        binderfs::add_device(&c.mnt, &name),
        libc::EEXIST,
        "second BINDER_CTL_ADD with the same name",
    )?;
    // The test's own device name exists too.
    let own = c.dev.rsplit('/').next().unwrap().to_string();
    expect_errno(
        binderfs::add_device(&c.mnt, &own),
        libc::EEXIST,
        "BINDER_CTL_ADD of an existing device",
    )
}

fn add_bad_names_eacces(c: &Ctx) -> TResult {
    for name in ["", ".", "..", "a/b"] {
        expect_errno(
            binderfs::add_device(&c.mnt, name),
            libc::EACCES,
            &format!("BINDER_CTL_ADD {name:?}"),
        )?;
    }
    // The control device keeps working.
    let _d = expect_ok(
        binderfs::Device::create(&c.mnt, &unique("after-bad")),
        "BINDER_CTL_ADD afterwards",
    )?;
    Ok(())
}

fn add_max_length_name(c: &Ctx) -> TResult {
    let base = unique("long");
    let name = format!("{base}{}", "x".repeat(BINDERFS_MAX_NAME - base.len()));
    ensure_eq!(name.len(), 255, "name length");
    let d = expect_ok(
        binderfs::Device::create(&c.mnt, &name),
        "BINDER_CTL_ADD with a 255-byte name",
    )?;
    ensure!(
        std::path::Path::new(&d.path()).exists(),
        "device with a 255-byte name missing"
    );
    Ok(())
}

fn add_null_ptr_efault(c: &Ctx) -> TResult {
    let ctl = Binder::open(&control(c))?;
    expect_errno(
        ctl.ioctl_raw(BINDER_CTL_ADD, 0),
        libc::EFAULT,
        "BINDER_CTL_ADD(NULL)",
    )
}

fn control_rejects_other_ioctls(c: &Ctx) -> TResult {
    let ctl = Binder::open(&control(c))?;
    let mut v = binder_version::default();
    expect_errno(
        ctl.ioctl(BINDER_VERSION, &mut v),
        libc::EINVAL,
        "BINDER_VERSION on binder-control",
    )?;
    let mut bwr = binder_write_read::default();
    expect_errno(
        ctl.ioctl(BINDER_WRITE_READ, &mut bwr),
        libc::EINVAL,
        "BINDER_WRITE_READ on binder-control",
    )
}

fn unlink_control_eperm(c: &Ctx) -> TResult {
    expect_errno(
        std::fs::remove_file(control(c)),
        libc::EPERM,
        "unlink binder-control",
    )
}

fn rename_control_eperm(c: &Ctx) -> TResult {
    let to = format!("{}/{}", c.mnt, unique("ctl-renamed"));
    expect_errno(
        std::fs::rename(control(c), &to),
        libc::EPERM,
        "rename binder-control",
    )?;
    // Nor can a device be renamed over it.
    let d = binderfs::Device::create(&c.mnt, &unique("over-ctl"))?;
    expect_errno(
        std::fs::rename(d.path(), control(c)),
        libc::EPERM,
        "rename a device onto binder-control",
    )
}

fn rename_device_works(c: &Ctx) -> TResult {
    let from = unique("ren-a");
    let to = unique("ren-b");
    let d = binderfs::add_device(&c.mnt, &from)?;
    let _ = d;
    let fp = format!("{}/{from}", c.mnt);
    let tp = format!("{}/{to}", c.mnt);
    let r = std::fs::rename(&fp, &tp);
    let res = (|| -> TResult {
        expect_ok(r, "rename a device")?;
        let b = Binder::open(&tp)?;
        ensure_eq!(b.version()?, 8, "version through the new name");
        Ok(())
    })();
    let _ = std::fs::remove_file(&fp);
    let _ = std::fs::remove_file(&tp);
    res
}

fn removed_device_gone(c: &Ctx) -> TResult {
    let name = unique("gone");
    binderfs::add_device(&c.mnt, &name)?;
    expect_ok(binderfs::remove_device(&c.mnt, &name), "unlink a device")?;
    expect_errno(
        Binder::open(&format!("{}/{name}", c.mnt)),
        libc::ENOENT,
        "open after unlink",
    )?;
    // The name can be reused.
    let _d = expect_ok(
        binderfs::Device::create(&c.mnt, &name),
        "BINDER_CTL_ADD of the removed name",
    )?;
    Ok(())
}

fn open_fd_survives_unlink(c: &Ctx) -> TResult {
    // A manager and a client (another process) both opened before the node is unlinked
    // keep talking through it.
    let name = unique("survive");
    binderfs::add_device(&c.mnt, &name)?;
    let path = format!("{}/{name}", c.mnt);
    let mgr = Binder::open_mapped(&path)?;
    mgr.set_context_mgr()?;
    mgr.enter_looper()?;
    let opened = harness::Pipe::new()?;
    let go = harness::Pipe::new()?;
    let p2 = path.clone();
    let cl = harness::fork_proc(|| {
        let b = Binder::open_mapped(&p2)?;
        opened.send_u64(1)?;
        go.recv_u64()?;
        let r = b.call(0, 1, &Payload::from_bytes(b"ping"))?;
        ensure_eq!(r.data, b"pong".to_vec(), "reply on an unlinked device");
        Ok(())
    })?;
    opened.recv_u64()?;
    binderfs::remove_device(&c.mnt, &name)?;
    ensure!(
        !std::path::Path::new(&path).exists(),
        "device node still there after unlink"
    );
    go.send_u64(1)?;
    let t = mgr.recv_txn()?;
    mgr.reply_and_free(t.td.buffer, &Payload::from_bytes(b"pong"))?;
    cl.join()
}

fn devices_isolated(c: &Ctx) -> TResult {
    // Each device has its own context manager: a call to handle 0 on the second device
    // reaches the second manager only.
    let other = binderfs::Device::create(&c.mnt, &unique("iso"))?;
    let a = client(c)?;
    a.set_context_mgr()?;
    a.enter_looper()?;
    let b = Binder::open_mapped(&other.path())?;
    expect_ok(b.set_context_mgr(), "a manager on a second device")?;
    b.enter_looper()?;
    let op = other.path();
    let cl = harness::fork_proc(|| {
        let cl = Binder::open_mapped(&op)?;
        cl.transact(0, 7, TF_ONE_WAY, &Payload::new())?;
        cl.expect(BR_TRANSACTION_COMPLETE)?;
        Ok(())
    })?;
    cl.join()?;
    let r = b.next()?;
    ensure!(
        matches!(r, Return::Transaction(td) if td.code == 7),
        "second device's manager got {}",
        r.name()
    );
    a.expect_nothing(200)?;
    Ok(())
}

fn features_files(c: &Ctx) -> TResult {
    for f in [
        "oneway_spam_detection",
        "extended_error",
        "freeze_notification",
    ] {
        let p = format!("{}/features/{f}", c.mnt);
        let s = std::fs::read_to_string(&p).map_err(|e| format!("{p}: {e}"))?;
        ensure_eq!(s, "1\n".to_string(), &format!("content of features/{f}"));
    }
    Ok(())
}

fn default_devices(c: &Ctx) -> TResult {
    // CONFIG_ANDROID_BINDER_DEVICES="binder,hwbinder,vndbinder" in this layer's config.
    for d in ["binder", "hwbinder", "vndbinder"] {
        let p = format!("{}/{d}", c.mnt);
        let m = std::fs::metadata(&p).map_err(|e| format!("{p}: {e}"))?;
        ensure!(
            m.file_type().is_char_device(),
            "{p} is not a character device"
        );
    }
    Ok(())
}

/// Mount a fresh binderfs instance with `opts` at a new directory; unmounted on drop.
pub fn mount(tag: &str, opts: &str) -> TResult<binderfs::Mount> {
    let dir = format!("/tmp/bct-mnt-{}-{tag}", std::process::id());
    std::fs::create_dir_all(&dir)?;
    match binderfs::Mount::new(&dir, opts) {
        Ok(m) => Ok(m),
        Err(e) => {
            let _ = std::fs::remove_dir(&dir);
            fail!("mount -t binder -o {opts:?} {dir}: {e}");
        }
    }
}

fn new_instance_independent(c: &Ctx) -> TResult {
    let m = mount("inst", "")?;
    ensure!(
        std::path::Path::new(&format!("{}/binder-control", m.dir)).exists(),
        "a new binderfs instance has no binder-control"
    );
    // Device names are per instance: the test's own device name is free there.
    let own = c.dev.rsplit('/').next().unwrap().to_string();
    let d = expect_ok(
        binderfs::Device::create(&m.dir, &own),
        "BINDER_CTL_ADD in the new instance",
    )?;
    let b = Binder::open_mapped(&d.path())?;
    expect_ok(b.set_context_mgr(), "manager in the new instance")?;
    // ...and independent from the test's device, whose manager slot is still free.
    let a = client(c)?;
    expect_ok(a.set_context_mgr(), "manager on the original device")?;
    drop(d);
    Ok(())
}
