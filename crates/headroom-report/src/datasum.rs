//! Checksums of the dataset files a run used (`--data PATH...`), so a figure that moves next week
//! can be told apart from data that changed. Files are hashed (SHA-256, the `sha256sum` value)
//! in a stream with progress; a file whose size and modification time are those of its last
//! hashing is not read again: the ledger keeps the checksum.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use headroom_store::ledger::Ledger;
use headroom_store::CoreError;

/// One dataset file as a run saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub path: String,
    pub bytes: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    pub sha256: String,
    /// The checksum came from the cache (size and mtime unchanged) rather than a fresh read.
    pub cached: bool,
}

/// What a run records of its dataset (sample `data`): every file with its checksum, and the
/// mounts the named paths are on (a local disk, a network share, an external drive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataRecord {
    pub shards: Vec<Shard>,
    pub mounts: Vec<headroom_probe::mounts::MountFacts>,
}

/// The mounts `paths` are on, each once.
pub fn mounts_of(paths: &[PathBuf]) -> Vec<headroom_probe::mounts::MountFacts> {
    let mut out: Vec<headroom_probe::mounts::MountFacts> = Vec::new();
    for p in paths {
        let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        if let Some(m) = headroom_probe::mounts::mount_of(&abs) {
            if !out.iter().any(|x| x.mount_point == m.mount_point) {
                out.push(m);
            }
        }
    }
    out
}

/// Progress of a checksum pass.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub done_bytes: u64,
    pub total_bytes: u64,
    pub file: &'a Path,
    pub files_done: usize,
    pub files: usize,
}

/// The most files one `--data` may name after folders are expanded; a folder of millions of
/// small files is better named by its archive.
pub const MAX_FILES: usize = 100_000;

fn io_err(what: &'static str, path: &Path, source: std::io::Error) -> CoreError {
    CoreError::Io {
        what,
        path: path.display().to_string(),
        source,
    }
}

/// The files under `paths`: a file as itself, a folder as every file below it (sorted, hidden
/// entries included, symbolic links followed once as files, not as folders).
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CoreError> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| {
            io_err(
                "cannot read the dataset path given with --data (check the path)",
                p,
                e,
            )
        })?;
        if meta.is_dir() {
            walk(p, &mut out)?;
        } else if meta.is_file() {
            out.push(p.clone());
        } else {
            // A device, a pipe or a socket has no end to hash (`/dev/zero` read forever).
            return Err(CoreError::InvalidInput(format!(
                "--data {} is not a regular file or a folder (a device, a pipe or a socket); \
                 name the dataset's files or its folder",
                p.display()
            )));
        }
        if out.len() > MAX_FILES {
            return Err(CoreError::InvalidInput(format!(
                "--data {} holds more than {MAX_FILES} files; name the dataset's archives or shards instead",
                p.display()
            )));
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), CoreError> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| io_err("cannot list the dataset folder", dir, e))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for e in entries {
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            walk(&path, out)?;
        } else if kind.is_file() || (kind.is_symlink() && path.is_file()) {
            out.push(path);
        }
        if out.len() > MAX_FILES {
            return Ok(());
        }
    }
    Ok(())
}

fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_nanos()).ok())
        .unwrap_or(0)
}

/// SHA-256 of `path` as lower-case hex, read in 1 MiB blocks; `on` sees the bytes read so far.
pub fn sha256_file(path: &Path, on: &mut dyn FnMut(u64)) -> Result<String, CoreError> {
    let mut f =
        std::fs::File::open(path).map_err(|e| io_err("cannot open a dataset file", path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err("cannot read a dataset file", path, e)),
        };
        hasher.update(&buf[..n]);
        done += n as u64;
        on(done);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Checksums of every file under `paths`, from `ledger`'s cache where a file's size and mtime are
/// unchanged, else read now (and cached). `on` sees progress as bytes are read.
pub fn checksums(
    ledger: &Ledger,
    paths: &[PathBuf],
    on: &mut dyn FnMut(&Progress<'_>),
) -> Result<Vec<Shard>, CoreError> {
    let files = expand(paths)?;
    let mut metas = Vec::with_capacity(files.len());
    for f in &files {
        let meta = std::fs::metadata(f).map_err(|e| io_err("cannot read a dataset file", f, e))?;
        let abs = std::fs::canonicalize(f).unwrap_or_else(|_| f.clone());
        // A file named twice (`--data D --data D`, or a folder and a file in it) counts once.
        if metas.iter().any(|(seen, _, _)| seen == &abs) {
            continue;
        }
        metas.push((abs, meta.len(), mtime_ns(&meta)));
    }
    let total: u64 = metas.iter().map(|m| m.1).sum();
    let mut done_before = 0u64;
    let mut out = Vec::with_capacity(files.len());
    for (i, (abs, bytes, mtime)) in metas.iter().enumerate() {
        let key = abs.display().to_string();
        let (sha256, cached) = if let Some(hit) = ledger.cached_checksum(&key, *bytes, *mtime)? {
            (hit, true)
        } else {
            let sum = sha256_file(abs, &mut |d| {
                on(&Progress {
                    done_bytes: done_before + d,
                    total_bytes: total,
                    file: abs,
                    files_done: i,
                    files: metas.len(),
                });
            })?;
            // The file changed while it was read: its checksum would describe neither version.
            let after =
                std::fs::metadata(abs).map_err(|e| io_err("cannot read a dataset file", abs, e))?;
            if after.len() != *bytes || mtime_ns(&after) != *mtime {
                return Err(CoreError::InvalidInput(format!(
                    "{} changed while it was being checksummed; run again once it is written",
                    abs.display()
                )));
            }
            ledger.cache_checksum(&key, *bytes, *mtime, &sum)?;
            (sum, false)
        };
        done_before += bytes;
        on(&Progress {
            done_bytes: done_before,
            total_bytes: total,
            file: abs,
            files_done: i + 1,
            files: metas.len(),
        });
        out.push(Shard {
            path: key,
            bytes: *bytes,
            mtime_ns: *mtime,
            sha256,
            cached,
        });
    }
    Ok(out)
}

/// One checksum standing for the whole set, so two runs compare on one line: SHA-256 over each
/// file's checksum and size in path order (paths themselves left out, so a moved copy of the
/// same data matches).
pub fn digest(shards: &[Shard]) -> String {
    let mut h = Sha256::new();
    let mut sorted: Vec<&Shard> = shards.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    for s in sorted {
        h.update(s.sha256.as_bytes());
        h.update(s.bytes.to_le_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_known_content() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("abc");
        std::fs::write(&p, b"abc").unwrap();
        // FIPS 180-2's first example.
        assert_eq!(
            sha256_file(&p, &mut |_| {}).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_device_or_a_pipe_is_refused_not_hashed_forever() {
        for odd in ["/dev/zero", "/dev/null"] {
            let e = expand(&[PathBuf::from(odd)]).expect_err(odd).to_string();
            assert!(e.contains("is not a regular file or a folder"), "{e}");
            assert!(e.contains(odd), "{e}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), b"x").unwrap();
        assert_eq!(expand(&[dir.path().to_owned()]).unwrap().len(), 1);
    }

    #[test]
    fn a_file_named_twice_is_counted_once() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("a.bin"), b"abc").unwrap();
        let ledger = Ledger::open(&dir.path().join("ledger.sqlite3")).unwrap();
        let once = checksums(&ledger, std::slice::from_ref(&data), &mut |_| {}).unwrap();
        let twice = checksums(
            &ledger,
            &[data.clone(), data.clone(), data.join("a.bin")],
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(twice.len(), 1);
        assert_eq!(digest(&once), digest(&twice));
    }
}
