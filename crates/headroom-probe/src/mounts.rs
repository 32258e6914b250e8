//! Where Headroom's folder (the ledger, caches) lives: a local disk, a network share or an
//! external drive — a figure read from a network mount is not a local figure. Parsed from
//! `/proc/self/mountinfo` on Linux; on macOS from `statfs(2)` (its file system name and
//! `MNT_LOCAL` flag) through [`classify_statfs`].

use std::path::Path;

pub use headroom_model::samples::{MountClass, MountFacts};

/// File systems whose data lives on another machine.
const NETWORK: [&str; 16] = [
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "fuse.sshfs",
    "sshfs",
    "9p",
    "afs",
    "ceph",
    "glusterfs",
    "lustre",
    "davfs",
    "fuse.rclone",
    "afpfs",
    "webdav",
];

/// Local, network or unknown from the file system type alone (a removable disk needs sysfs).
pub fn classify(fs_type: &str) -> MountClass {
    if NETWORK.contains(&fs_type) {
        MountClass::Network
    } else if fs_type.is_empty() {
        MountClass::Unknown
    } else {
        MountClass::Local
    }
}

/// macOS: a mount from what `statfs(2)` says of it — its file system name, where it is mounted,
/// and whether the kernel calls it local (`MNT_LOCAL`). Disks other than the boot volume are
/// mounted under `/Volumes`, which is how an external drive shows.
pub fn classify_statfs(fs_type: &str, mounted_on: &str, local: bool) -> MountClass {
    match classify(fs_type) {
        MountClass::Network => MountClass::Network,
        _ if !local => MountClass::Network,
        MountClass::Unknown => MountClass::Unknown,
        _ if mounted_on.starts_with("/Volumes/") => MountClass::External,
        other => other,
    }
}

/// mountinfo escapes spaces and a few other bytes as `\ooo`. Works on bytes, so a path in UTF-8
/// (or not: the kernel prints names as they are) keeps its characters, and a `\` before a
/// multi-byte character is left as it is.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            let digits = &b[i + 1..i + 4];
            if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let v = digits
                    .iter()
                    .fold(0u16, |acc, d| acc * 8 + u16::from(d - b'0'));
                if let Ok(byte) = u8::try_from(v) {
                    out.push(byte);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount of `path` in a `/proc/self/mountinfo` text: the longest mount point that contains
/// it (the last one listed wins, as the kernel stacks them).
pub fn parse_mountinfo(text: &str, path: &Path) -> Option<MountFacts> {
    let mut best: Option<MountFacts> = None;
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let Some(point) = left.split(' ').nth(4) else {
            continue;
        };
        let mount_point = unescape(point);
        let mut r = right.split(' ');
        let fs_type = r.next().unwrap_or("").to_owned();
        let source = unescape(r.next().unwrap_or(""));
        if !path.starts_with(&mount_point) {
            continue;
        }
        let longer = best
            .as_ref()
            .is_none_or(|b| mount_point.len() >= b.mount_point.len());
        if longer {
            best = Some(MountFacts {
                class: classify(&fs_type),
                mount_point,
                fs_type,
                source,
            });
        }
    }
    best
}

/// The mount `path` lives on, on this machine.
pub fn mount_of(path: &Path) -> Option<MountFacts> {
    #[cfg(target_os = "linux")]
    {
        let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let mut m = parse_mountinfo(&text, path)?;
        // A USB disk: its block device says it is removable.
        if let Some(dev) = m.source.strip_prefix("/dev/") {
            let disk: String = dev.chars().take_while(char::is_ascii_alphabetic).collect();
            let removable = std::fs::read_to_string(format!("/sys/block/{disk}/removable"));
            if removable.is_ok_and(|r| r.trim() == "1") {
                m.class = MountClass::External;
            }
        }
        Some(m)
    }
    #[cfg(target_os = "macos")]
    {
        use std::ffi::{CStr, CString};
        use std::os::unix::ffi::OsStrExt;
        let c = CString::new(path.as_os_str().as_bytes()).ok()?;
        // SAFETY: statfs fills the zeroed struct for a NUL-terminated path; the name arrays it
        // fills are NUL-terminated within their length.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
            return None;
        }
        let text = |a: &[libc::c_char]| {
            // SAFETY: as above.
            unsafe { CStr::from_ptr(a.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        };
        let fs_type = text(&st.f_fstypename);
        let mount_point = text(&st.f_mntonname);
        let local = st.f_flags & (libc::MNT_LOCAL as u32) != 0;
        Some(MountFacts {
            class: classify_statfs(&fs_type, &mount_point, local),
            source: text(&st.f_mntfromname),
            fs_type,
            mount_point,
        })
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = path;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cargo-fuzz found a panic here: a `\` followed by a multi-byte character was sliced
    /// inside that character; and non-ASCII mount points came out as Latin-1 mojibake.
    #[test]
    fn escapes_are_decoded_on_bytes_and_other_text_is_kept() {
        assert_eq!(unescape(r"/mnt/my\040disk"), "/mnt/my disk");
        assert_eq!(unescape("/Volumes/Données"), "/Volumes/Données");
        assert_eq!(unescape("/x/\\é1/y"), "/x/\\é1/y");
        assert_eq!(unescape(r"/a\777b"), r"/a\777b");
        assert_eq!(unescape(r"/a\04"), r"/a\04");
        assert_eq!(unescape(r"/caf\303\251"), "/café");
        let crash = "35 31 0:32 / /c\u{fffd}\\,\u{97}x rw - cgroup c\\,\u{fffd}x rw\n";
        let _ = parse_mountinfo(crash, Path::new("/c"));
    }

    #[test]
    fn macos_statfs_answers_are_classified() {
        // What statfs says on a Mac: the boot volume, an external SSD, an SMB share, NFS, and
        // a network file system the kernel does not call local.
        assert_eq!(
            classify_statfs("apfs", "/System/Volumes/Data", true),
            MountClass::Local
        );
        assert_eq!(classify_statfs("apfs", "/", true), MountClass::Local);
        assert_eq!(
            classify_statfs("exfat", "/Volumes/T7", true),
            MountClass::External
        );
        assert_eq!(
            classify_statfs("smbfs", "/Volumes/lab", false),
            MountClass::Network
        );
        assert_eq!(
            classify_statfs("nfs", "/Users/me/data", false),
            MountClass::Network
        );
        assert_eq!(
            classify_statfs("macfuse", "/Users/me/bucket", false),
            MountClass::Network
        );
        assert_eq!(classify_statfs("", "/", true), MountClass::Unknown);
    }

    #[test]
    fn the_longest_mount_point_holding_the_path() {
        let text =
            include_str!("../../headroom-core/tests/fixtures/linux/mountinfo_debian12_vm.txt");
        let m = parse_mountinfo(text, Path::new("/root/.local/share/headroom")).expect("a mount");
        assert_eq!(
            (
                m.mount_point.as_str(),
                m.fs_type.as_str(),
                m.source.as_str(),
                m.class
            ),
            ("/", "ext4", "/dev/vda", MountClass::Local)
        );
        let shm = parse_mountinfo(text, Path::new("/dev/shm/x")).expect("a mount");
        assert_eq!(
            (shm.mount_point.as_str(), shm.fs_type.as_str()),
            ("/dev/shm", "tmpfs")
        );
        // A home on NFS, in mountinfo's own layout (octal-escaped space in the mount point).
        let nfs =
            "40 27 0:50 / /home/ada\\040lab rw,relatime - nfs4 fs.lab:/export/ada rw,vers=4.2\n";
        let n = parse_mountinfo(
            &format!("{text}{nfs}"),
            Path::new("/home/ada lab/.local/share/headroom"),
        )
        .expect("the share");
        assert_eq!(
            (n.mount_point.as_str(), n.class),
            ("/home/ada lab", MountClass::Network)
        );
        assert_eq!(n.source, "fs.lab:/export/ada");
    }
}
