//! `headroom-app --prewarm`: started by `headroom-tray` a few seconds after it is up, it asks the
//! kernel to read into the disk cache the files the popover's first start will map — this
//! binary, the shared libraries it was linked with (WebKitGTK, JavaScriptCore, GTK, ICU's data)
//! and WebKit's helper programs — then exits, before any window or toolkit is made. After a
//! reboot the first open would otherwise read them from the disk while the user waits (see
//! `bench/first_open.py`). The page cache is not the process's memory: the kernel gives it back
//! under pressure. Linux only; elsewhere (macOS keeps WebKit in the system's shared cache) it
//! exits at once.

// What reads the list is Linux's: elsewhere only the tests call it.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use std::path::{Path, PathBuf};

/// A file to read ahead: the byte ranges the loader mapped of it (its `PT_LOAD` segments: no
/// debug information or symbol tables), or all of it when `load` is empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToRead {
    pub path: PathBuf,
    pub load: Vec<(u64, u64)>,
}

impl ToRead {
    fn whole(path: PathBuf) -> Self {
        Self {
            path,
            load: Vec::new(),
        }
    }
}

/// Exits after the read-ahead when the process was started with `--prewarm`.
pub fn run_if_asked() {
    if !std::env::args().any(|a| a == "--prewarm") {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // Below everything the user runs: this is a favour to a later open, never a cost now.
        // SAFETY: nice() only changes this process's scheduling priority.
        unsafe {
            libc::nice(10);
        }
        let files = files_to_read(&loaded_objects());
        let mut bytes = 0u64;
        for f in &files {
            bytes += read_ahead(&f.path, &f.load);
        }
        eprintln!(
            "headroom-app: read ahead {} files, {:.0} MiB",
            files.len(),
            bytes as f64 / f64::from(1u32 << 20)
        );
    }
    std::process::exit(0);
}

/// The files to read ahead: the loaded objects (executable first), each once, and the helper
/// programs and libraries in WebKit's own folder beside `libwebkit2gtk-X.Y.so` (`webkit2gtk-X.Y/`:
/// the web and network processes, the injected bundle), two levels deep.
pub fn files_to_read(loaded: &[ToRead]) -> Vec<ToRead> {
    let mut out: Vec<ToRead> = Vec::new();
    for o in loaded {
        if o.path.is_absolute() && !out.iter().any(|x| x.path == o.path) {
            out.push(o.clone());
        }
    }
    let helpers: Vec<PathBuf> = out
        .iter()
        .filter_map(|o| webkit_folder(&o.path))
        .flat_map(|dir| files_under(&dir, 2))
        .collect();
    for h in helpers {
        if !out.iter().any(|x| x.path == h) {
            out.push(ToRead::whole(h));
        }
    }
    out
}

/// `…/libwebkit2gtk-4.1.so.0` → `…/webkit2gtk-4.1`, where that folder exists.
fn webkit_folder(lib: &Path) -> Option<PathBuf> {
    let name = lib.file_name()?.to_str()?;
    let rest = name.strip_prefix("libwebkit2gtk-")?;
    let version = rest.split(".so").next()?;
    let dir = lib.parent()?.join(format!("webkit2gtk-{version}"));
    dir.is_dir().then_some(dir)
}

/// The regular files under `dir`, `depth` levels deep, sorted.
fn files_under(dir: &Path, depth: u32) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_file() {
            out.push(p);
        } else if p.is_dir() && depth > 1 {
            out.extend(files_under(&p, depth - 1));
        }
    }
    out
}

/// This process's executable and the shared objects the dynamic loader mapped for it, each with
/// its loadable segments' file ranges (`dl_iterate_phdr`: the loader's own list and program
/// headers, not a parse of `/proc`).
#[cfg(target_os = "linux")]
fn loaded_objects() -> Vec<ToRead> {
    use std::ffi::CStr;
    use std::os::raw::{c_int, c_void};
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: the loader passes a valid entry for the call, and `data` is the Vec below.
        let (info, out) = unsafe { (&*info, &mut *data.cast::<Vec<ToRead>>()) };
        let load: Vec<(u64, u64)> = if info.dlpi_phdr.is_null() {
            Vec::new()
        } else {
            // SAFETY: `dlpi_phdr` points to `dlpi_phnum` program headers of this object.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
                .iter()
                .filter(|h| h.p_type == libc::PT_LOAD && h.p_filesz > 0)
                .map(|h| (h.p_offset, h.p_filesz))
                .collect()
        };
        // The executable comes with an empty name: it is `current_exe`.
        let path = if info.dlpi_name.is_null() {
            None
        } else {
            // SAFETY: a non-null name is a NUL-terminated string owned by the loader.
            let name = unsafe { CStr::from_ptr(info.dlpi_name) };
            name.to_str().ok().map(PathBuf::from)
        };
        match path.filter(|p| !p.as_os_str().is_empty()) {
            Some(path) => out.push(ToRead { path, load }),
            None => {
                if let Some(first) = out.first_mut().filter(|f| f.load.is_empty()) {
                    first.load = load;
                }
            }
        }
        0
    }
    let mut out: Vec<ToRead> = std::env::current_exe()
        .into_iter()
        .map(ToRead::whole)
        .collect();
    // SAFETY: the callback only reads the entries it is given and pushes onto `out`.
    unsafe {
        libc::dl_iterate_phdr(Some(each), (&raw mut out).cast());
    }
    out
}

/// Asks the kernel to read `load`'s ranges of `path` (all of it when empty) into the disk cache
/// (`POSIX_FADV_WILLNEED`); returns the bytes asked for, 0 when it cannot be opened.
#[cfg(target_os = "linux")]
fn read_ahead(path: &Path, load: &[(u64, u64)]) -> u64 {
    use std::os::fd::AsRawFd as _;
    let Ok(f) = std::fs::File::open(path) else {
        return 0;
    };
    let whole = [(0, f.metadata().map(|m| m.len()).unwrap_or(0))];
    let ranges = if load.is_empty() { &whole[..] } else { load };
    let mut asked = 0;
    for &(at, len) in ranges {
        let (Ok(o), Ok(l)) = (libc::off_t::try_from(at), libc::off_t::try_from(len)) else {
            continue;
        };
        // SAFETY: an advisory call on a descriptor this function owns.
        if unsafe { libc::posix_fadvise(f.as_raw_fd(), o, l, libc::POSIX_FADV_WILLNEED) } == 0 {
            asked += len;
        }
    }
    asked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loaded_objects_and_webkits_helpers_beside_its_library_are_read_each_once() {
        let d = tempfile::tempdir().expect("temp");
        let lib = d.path().join("libwebkit2gtk-4.1.so.0");
        std::fs::write(&lib, b"lib").expect("lib");
        let helpers = d.path().join("webkit2gtk-4.1");
        std::fs::create_dir_all(helpers.join("injected-bundle")).expect("dirs");
        std::fs::write(helpers.join("WebKitWebProcess"), b"x").expect("web");
        std::fs::write(helpers.join("WebKitNetworkProcess"), b"x").expect("net");
        std::fs::write(
            helpers.join("injected-bundle/libwebkit2gtkinjectedbundle.so"),
            b"x",
        )
        .expect("bundle");
        let exe = d.path().join("headroom-app");
        std::fs::write(&exe, b"exe").expect("exe");
        let exe = ToRead {
            path: exe,
            load: vec![(0, 3)],
        };
        let lib = ToRead {
            path: lib,
            load: vec![(0, 2), (2, 1)],
        };
        let files = files_to_read(&[
            exe.clone(),
            lib.clone(),
            ToRead::whole(PathBuf::from("linux-vdso.so.1")),
            ToRead::whole(lib.path.clone()),
        ]);
        assert_eq!(
            files,
            vec![
                exe,
                lib,
                ToRead::whole(helpers.join("WebKitNetworkProcess")),
                ToRead::whole(helpers.join("WebKitWebProcess")),
                ToRead::whole(helpers.join("injected-bundle/libwebkit2gtkinjectedbundle.so")),
            ]
        );
    }

    #[test]
    fn no_webkit_folder_adds_nothing() {
        let d = tempfile::tempdir().expect("temp");
        let lib = ToRead::whole(d.path().join("libwebkit2gtk-4.1.so.0"));
        assert_eq!(files_to_read(std::slice::from_ref(&lib)), vec![lib]);
        assert_eq!(webkit_folder(Path::new("/usr/lib/libgtk-3.so.0")), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_test_binary_sees_itself_and_libc_loaded_with_their_segments() {
        let loaded = loaded_objects();
        let me = &loaded[0];
        assert_eq!(Some(&me.path), std::env::current_exe().ok().as_ref());
        let size = std::fs::metadata(&me.path).expect("the test binary").len();
        // Its loadable segments, not its debug information (a release test binary with
        // debuginfo is mostly that).
        assert!(!me.load.is_empty(), "{me:?}");
        let mapped: u64 = me.load.iter().map(|r| r.1).sum();
        assert!(mapped > 0 && mapped <= size, "{mapped} of {size}");
        assert!(me.load.iter().all(|&(at, len)| at + len <= size), "{me:?}");
        let libc = loaded
            .iter()
            .find(|o| {
                o.path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libc.so"))
            })
            .unwrap_or_else(|| panic!("no libc in {loaded:?}"));
        assert!(!libc.load.is_empty(), "{libc:?}");
        assert_eq!(read_ahead(&me.path, &me.load), mapped);
        assert_eq!(read_ahead(&me.path, &[]), size);
        assert_eq!(read_ahead(Path::new("/no/such/file"), &[]), 0);
    }
}
