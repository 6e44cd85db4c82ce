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
//! environment forces this way at run time, for tests; the cargo feature `portable-write` compiles the Linux way
//! out, see `platform`.)

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::sys::platform;

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
    let permissions = existing.as_ref().map(std::fs::Metadata::permissions).or_else(platform::new_file_permissions);
    let replacing = existing.is_some();
    let Some(mut file) = unnamed_in(dir) else {
        return write_named(path, dir, permissions, replacing, write);
    };
    write(&mut file)?;
    if let Some(permissions) = permissions {
        file.set_permissions(permissions)?;
    }
    if replacing {
        file.sync_all()?;
    }
    if !replacing {
        match platform::link_unnamed(&file, path) {
            Ok(()) => return Ok(()),
            // Someone made the file meanwhile: replace it like any existing file.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => file.sync_all()?,
            Err(e) => return Err(e),
        }
    }
    let temporary = link_temporary(&file, dir)?;
    std::fs::rename(&temporary, path).inspect_err(|_| drop(std::fs::remove_file(&temporary)))
}

/// An unnamed file in `dir`, if the system and the file system make one and the environment does not say no.
fn unnamed_in(dir: &Path) -> Option<File> {
    if std::env::var_os("ONNX_BCAST_NO_O_TMPFILE").is_some() {
        return None;
    }
    platform::unnamed_file_in(dir)
}

/// Links the unnamed `file` under a fresh temporary name in `dir` and returns it.
fn link_temporary(file: &File, dir: &Path) -> io::Result<PathBuf> {
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    loop {
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let candidate = dir.join(format!(".onnx-bcast-{}-{n}.tmp", std::process::id()));
        match platform::link_unnamed(file, &candidate) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            linked => return linked.map(|()| candidate),
        }
    }
}

/// The fallback without `O_TMPFILE`: a named temporary file renamed into place.
fn write_named(
    path: &Path,
    dir: &Path,
    permissions: Option<std::fs::Permissions>,
    replacing: bool,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let mut tmp = tempfile::Builder::new().prefix(".onnx-bcast-").suffix(".tmp").tempfile_in(dir)?;
    write(tmp.as_file_mut())?;
    if let Some(permissions) = permissions {
        tmp.as_file().set_permissions(permissions)?;
    }
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

    /// `write_atomically`, and the portable path itself (a named temporary file renamed into place), which other
    /// systems take and which a Linux build takes with the feature `portable-write`.
    type Writer = fn(&Path, &mut dyn FnMut(&mut File) -> io::Result<()>) -> io::Result<()>;

    fn both_paths() -> [(&'static str, Writer); 2] {
        fn default(path: &Path, write: &mut dyn FnMut(&mut File) -> io::Result<()>) -> io::Result<()> {
            write_atomically(path, write)
        }
        fn named(path: &Path, write: &mut dyn FnMut(&mut File) -> io::Result<()>) -> io::Result<()> {
            let existing = std::fs::metadata(path).ok();
            let permissions =
                existing.as_ref().map(std::fs::Metadata::permissions).or_else(platform::new_file_permissions);
            write_named(path, folder_of(path), permissions, existing.is_some(), write)
        }
        [("default", default), ("portable", named)]
    }

    #[test]
    fn a_new_file_and_a_replaced_one_appear_whole_and_nothing_else_does() {
        for (way, write) in both_paths() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("m.onnx");
            write(&path, &mut |f| io::Write::write_all(f, b"first")).unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"first", "{way}");
            write(&path, &mut |f| io::Write::write_all(f, b"second")).unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"second", "{way}");
            assert_eq!(names_in(dir.path()), ["m.onnx"], "{way}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_new_file_is_readable_by_all_and_a_replaced_one_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        for (way, write) in both_paths() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("m.onnx");
            write(&path, &mut |f| io::Write::write_all(f, b"first")).unwrap();
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644, "{way}");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
            write(&path, &mut |f| io::Write::write_all(f, b"second")).unwrap();
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640, "{way}");
        }
    }

    #[test]
    fn a_failed_write_leaves_no_file_and_the_old_one_untouched() {
        for (way, write) in both_paths() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("m.onnx");
            let failed = write(&path, &mut |f| {
                io::Write::write_all(f, b"partial")?;
                Err(io::Error::other("stop"))
            });
            assert!(failed.is_err(), "{way}");
            assert!(names_in(dir.path()).is_empty(), "{way}");
            std::fs::write(&path, b"old").unwrap();
            assert!(write(&path, &mut |_| Err(io::Error::other("stop"))).is_err(), "{way}");
            assert_eq!(std::fs::read(&path).unwrap(), b"old", "{way}");
            assert_eq!(names_in(dir.path()), ["m.onnx"], "{way}");
        }
    }

    #[test]
    fn while_being_written_the_file_has_no_name_or_only_a_temporary_one() {
        for (way, write) in both_paths() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("m.onnx");
            let mut seen = Vec::new();
            write(&path, &mut |f| {
                seen = names_in(dir.path());
                io::Write::write_all(f, b"x")
            })
            .unwrap();
            let unnamed = way == "default" && platform::UNNAMED_TEMPORARY_FILES;
            match unnamed {
                true => assert!(seen.is_empty(), "a name existed during the write: {seen:?}"),
                false => assert!(
                    matches!(&seen[..], [t] if t.starts_with(".onnx-bcast-") && t.ends_with(".tmp")),
                    "{way}: {seen:?}"
                ),
            }
        }
    }
}
