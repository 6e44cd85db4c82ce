//! Writing a file so that it appears complete or not at all, and so that a killed process leaves nothing behind.
//!
//! On Linux the content goes into an unnamed file made with `O_TMPFILE` in the target's folder. It has no name
//! until it is complete, so `kill -9`, a crash or a full disk at any point before that leaves no file anywhere: the
//! kernel frees an unnamed file with its last descriptor. Once written it gets its name:
//!
//! - a new file is linked into place with `linkat` (through `/proc/self/fd`, or `AT_EMPTY_PATH` where `/proc` is
//!   not mounted), which fails rather than replace a file that appeared meanwhile;
//! - a file being replaced (the input itself, in place) is first made durable (`fsync`), then linked under a
//!   temporary name `.onnx-bcast-PID-N.tmp` beside it and renamed over it, so that a crash never leaves a truncated
//!   file where a good one was. Only a kill in the instant between that link and the rename leaves the temporary
//!   name behind.
//!
//! Where `O_TMPFILE` is not available (another OS, or a file system without it, such as some network ones), the
//! content is written to a named temporary file `.onnx-bcast-XXXXXX.tmp` beside the target and renamed into place;
//! a process killed meanwhile leaves that file, which is safe to delete. (`ONNX_BCAST_NO_O_TMPFILE` set in the
//! environment forces this way, for tests.)

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// The folder a path's file lives in (`.` for a bare name).
pub fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Writes `path` through `write`; see the module documentation. A failure leaves no file behind and whatever was at
/// `path` untouched (`path` may be the file `write` reads from).
pub fn write_atomically(path: &Path, write: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    let dir = folder_of(path);
    let existing = std::fs::metadata(path).ok();
    // The file gets the permissions of the file it replaces, or the usual ones for a new file.
    let permissions = existing.as_ref().map_or_else(|| std::fs::Permissions::from_mode(0o644), |m| m.permissions());
    let replacing = existing.is_some();
    let Some(mut file) = unnamed_in(dir) else {
        return write_named(path, dir, permissions, replacing, write);
    };
    write(&mut file)?;
    file.set_permissions(permissions)?;
    if replacing {
        file.sync_all()?;
    }
    if !replacing {
        match link(&file, path) {
            Ok(()) => return Ok(()),
            // Someone made the file meanwhile: replace it like any existing file.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => file.sync_all()?,
            Err(e) => return Err(e),
        }
    }
    let temporary = link_temporary(&file, dir)?;
    std::fs::rename(&temporary, path).inspect_err(|_| drop(std::fs::remove_file(&temporary)))
}

/// An unnamed file in `dir`, if the system and the file system make one.
fn unnamed_in(dir: &Path) -> Option<File> {
    if std::env::var_os("ONNX_BCAST_NO_O_TMPFILE").is_some() {
        return None;
    }
    std::fs::OpenOptions::new().read(true).write(true).mode(0o600).custom_flags(libc::O_TMPFILE).open(dir).ok()
}

/// Gives the unnamed `file` the name `path`; fails if `path` exists.
fn link(file: &File, path: &Path) -> io::Result<()> {
    let target = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    let proc_path = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).expect("no NUL in the path");
    // SAFETY: both paths are NUL-terminated strings that outlive the calls; the descriptor is open.
    let linked = unsafe {
        libc::linkat(libc::AT_FDCWD, proc_path.as_ptr(), libc::AT_FDCWD, target.as_ptr(), libc::AT_SYMLINK_FOLLOW)
    };
    if linked == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    if error.kind() != io::ErrorKind::NotFound || Path::new("/proc/self/fd").exists() {
        return Err(error);
    }
    // No /proc: AT_EMPTY_PATH links the descriptor itself (it needs CAP_DAC_READ_SEARCH on older kernels).
    let empty = CString::new("").expect("no NUL");
    // SAFETY: as above.
    let linked =
        unsafe { libc::linkat(file.as_raw_fd(), empty.as_ptr(), libc::AT_FDCWD, target.as_ptr(), libc::AT_EMPTY_PATH) };
    if linked == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Links the unnamed `file` under a fresh temporary name in `dir` and returns it.
fn link_temporary(file: &File, dir: &Path) -> io::Result<PathBuf> {
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    loop {
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let candidate = dir.join(format!(".onnx-bcast-{}-{n}.tmp", std::process::id()));
        match link(file, &candidate) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            linked => return linked.map(|()| candidate),
        }
    }
}

/// The fallback without `O_TMPFILE`: a named temporary file renamed into place.
fn write_named(
    path: &Path,
    dir: &Path,
    permissions: std::fs::Permissions,
    replacing: bool,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let mut tmp = tempfile::Builder::new().prefix(".onnx-bcast-").suffix(".tmp").tempfile_in(dir)?;
    write(tmp.as_file_mut())?;
    tmp.as_file().set_permissions(permissions)?;
    if replacing {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }

    #[test]
    fn a_new_file_and_a_replaced_one_appear_whole_and_nothing_else_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.onnx");
        write_atomically(&path, |f| io::Write::write_all(f, b"first")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomically(&path, |f| io::Write::write_all(f, b"second")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
        assert_eq!(names_in(dir.path()), ["m.onnx"]);
    }

    #[test]
    fn a_failed_write_leaves_no_file_and_the_old_one_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.onnx");
        let failed = write_atomically(&path, |f| {
            io::Write::write_all(f, b"partial")?;
            Err(io::Error::other("stop"))
        });
        assert!(failed.is_err());
        assert!(names_in(dir.path()).is_empty());
        std::fs::write(&path, b"old").unwrap();
        assert!(write_atomically(&path, |_| Err(io::Error::other("stop"))).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(names_in(dir.path()), ["m.onnx"]);
    }

    #[test]
    fn while_being_written_the_file_has_no_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.onnx");
        let mut seen = Vec::new();
        write_atomically(&path, |f| {
            seen = names_in(dir.path());
            io::Write::write_all(f, b"x")
        })
        .unwrap();
        assert!(seen.is_empty(), "a name existed during the write: {seen:?}");
    }
}
