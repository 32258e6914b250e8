//! Whether this Linux runs in a container or a virtual machine, and which folders reach it from
//! the host through the VM's file sharing. On a Mac, Docker Desktop, Colima, Lima and UTM run
//! Linux in a VM: PyTorch sees no Metal there, so MPS does not exist however the Mac is built,
//! the VM holds the memory it was given whether it uses it or not, and files in folders shared
//! from the Mac pass through the VM's file sharing. Pure over the files it reads ([`read`] takes
//! a root, so a test lays out the same files).

use std::path::Path;

use serde::{Deserialize, Serialize};

/// What this Linux runs inside, and what said so.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Isolation {
    /// `Docker`, `Podman`, `Kubernetes`, `LXC`, `containerd`.
    pub container: Option<String>,
    /// `Apple Virtualization`, `QEMU`, `Docker Desktop (LinuxKit)`, `VMware`, `VirtualBox`,
    /// `Hyper-V`, `Parallels`, `Xen`, `a hypervisor` (the CPU's flag alone).
    pub vm: Option<String>,
    /// Folders shared from the host: where they are mounted and through what (`virtiofs`,
    /// `9p`, `fuse.grpcfuse`, …).
    pub shared_folders: Vec<SharedFolder>,
    /// The files that said so, for the reader who doubts it.
    pub evidence: Vec<String>,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedFolder {
    pub path: String,
    pub fs_type: String,
}

impl Isolation {
    /// Nothing found: bare metal (or a container that hides itself).
    pub fn is_none(&self) -> bool {
        self.container.is_none() && self.vm.is_none()
    }

    /// `a Docker container in a QEMU VM`, `a VMware VM`, `a Podman container`.
    pub fn describe(&self) -> Option<String> {
        match (&self.container, &self.vm) {
            (Some(c), Some(v)) => Some(format!("a {c} container in a VM ({v})")),
            (Some(c), None) => Some(format!("a {c} container")),
            (None, Some(v)) => Some(format!("a VM ({v})")),
            (None, None) => None,
        }
    }
}

/// The container runtime, from its marker files and the cgroup of process 1.
pub fn container_of(dockerenv: bool, containerenv: bool, cgroup: &str) -> Option<(String, String)> {
    if dockerenv {
        return Some(("Docker".into(), "/.dockerenv exists".into()));
    }
    if containerenv {
        return Some(("Podman".into(), "/run/.containerenv exists".into()));
    }
    for line in cgroup.lines() {
        let path = line.rsplit(':').next().unwrap_or_default();
        for (needle, name) in [
            ("kubepods", "Kubernetes"),
            ("/docker", "Docker"),
            ("libpod", "Podman"),
            ("/lxc", "LXC"),
            ("containerd", "containerd"),
        ] {
            if path.contains(needle) {
                return Some((name.into(), format!("/proc/1/cgroup: {}", line.trim())));
            }
        }
    }
    None
}

/// The hypervisor, from the firmware's vendor and product (DMI), the kernel's build string and,
/// failing those, the CPU's `hypervisor` flag.
pub fn vm_of(vendor: &str, product: &str, kernel: &str, cpuinfo: &str) -> Option<(String, String)> {
    let (vendor, product) = (vendor.trim(), product.trim());
    let dmi = format!("DMI: {vendor} / {product}");
    let named = if product.contains("Apple Virtualization") {
        Some("Apple Virtualization")
    } else if vendor.contains("QEMU") || product.contains("QEMU") {
        Some("QEMU")
    } else if vendor.contains("VMware") {
        Some("VMware")
    } else if product.contains("VirtualBox") || vendor.contains("innotek") {
        Some("VirtualBox")
    } else if vendor.contains("Microsoft") && product.contains("Virtual Machine") {
        Some("Hyper-V")
    } else if vendor.contains("Parallels") {
        Some("Parallels")
    } else if vendor.contains("Xen") {
        Some("Xen")
    } else {
        None
    };
    if let Some(n) = named {
        return Some((n.into(), dmi));
    }
    if kernel.contains("linuxkit") {
        return Some((
            "Docker Desktop (LinuxKit)".into(),
            "the kernel is LinuxKit's".into(),
        ));
    }
    let flagged = cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags") || l.starts_with("Features"))
        .any(|l| l.split_whitespace().any(|w| w == "hypervisor"));
    flagged.then(|| {
        (
            "a hypervisor".into(),
            "the CPU reports the hypervisor flag (/proc/cpuinfo)".into(),
        )
    })
}

/// File systems through which a VM reaches its host's folders.
const SHARED_FS: &[&str] = &[
    "virtiofs",
    "9p",
    "fuse.grpcfuse",
    "fakeowner",
    "vboxsf",
    "vmhgfs",
    "fuse.vmhgfs-fuse",
    "prl_fs",
    "fuse.sshfs",
];

/// The mounts (`/proc/mounts`) of file systems shared from the host.
pub fn shared_folders(mounts: &str) -> Vec<SharedFolder> {
    mounts
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (_, path, fs) = (w.next()?, w.next()?, w.next()?);
            SHARED_FS.contains(&fs).then(|| SharedFolder {
                path: path.replace("\\040", " "),
                fs_type: fs.to_owned(),
            })
        })
        .collect()
}

/// Reads the files under `root` (`/` on the machine itself).
pub fn read(root: &Path) -> Isolation {
    let text = |p: &str| std::fs::read_to_string(root.join(p)).unwrap_or_default();
    let mut iso = Isolation::default();
    if let Some((c, why)) = container_of(
        root.join(".dockerenv").exists(),
        root.join("run/.containerenv").exists(),
        &text("proc/1/cgroup"),
    ) {
        iso.container = Some(c);
        iso.evidence.push(why);
    }
    if let Some((v, why)) = vm_of(
        &text("sys/class/dmi/id/sys_vendor"),
        &text("sys/class/dmi/id/product_name"),
        &text("proc/version"),
        &text("proc/cpuinfo"),
    ) {
        iso.vm = Some(v);
        iso.evidence.push(why);
    }
    iso.shared_folders = shared_folders(&text("proc/mounts"));
    iso
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_are_told_by_their_markers_and_cgroups() {
        assert_eq!(
            container_of(true, false, "").map(|c| c.0).as_deref(),
            Some("Docker")
        );
        assert_eq!(
            container_of(false, true, "").map(|c| c.0).as_deref(),
            Some("Podman")
        );
        let k8s = "0::/kubepods/besteffort/pod1234/abcd\n";
        assert_eq!(
            container_of(false, false, k8s).map(|c| c.0).as_deref(),
            Some("Kubernetes")
        );
        let docker_v1 = "12:memory:/docker/3f2a9c\n11:cpu:/docker/3f2a9c\n";
        assert_eq!(
            container_of(false, false, docker_v1)
                .map(|c| c.0)
                .as_deref(),
            Some("Docker")
        );
        // A cgroup v2 host and a v1 host's root: no container.
        assert_eq!(container_of(false, false, "0::/init.scope\n"), None);
        assert_eq!(
            container_of(false, false, "9:name=systemd:/\n8:pids:/\n"),
            None
        );
        // A user's session slice named after a docker CLI is not a container.
        assert_eq!(
            container_of(
                false,
                false,
                "0::/user.slice/user-1000.slice/session-2.scope\n"
            ),
            None
        );
    }

    #[test]
    fn hypervisors_are_told_by_firmware_then_kernel_then_cpu_flag() {
        let flags = "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr hypervisor lahf_lm\n";
        let bare = "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr lahf_lm\n";
        let v = |vendor: &str, product: &str, kernel: &str, cpu: &str| {
            vm_of(vendor, product, kernel, cpu).map(|v| v.0)
        };
        assert_eq!(
            v(
                "Apple Inc.\n",
                "Apple Virtualization Generic Platform\n",
                "",
                flags
            )
            .as_deref(),
            Some("Apple Virtualization")
        );
        assert_eq!(
            v("QEMU\n", "Standard PC (Q35 + ICH9, 2009)\n", "", flags).as_deref(),
            Some("QEMU")
        );
        assert_eq!(
            v("VMware, Inc.\n", "VMware20,1\n", "", bare).as_deref(),
            Some("VMware")
        );
        assert_eq!(
            v("innotek GmbH\n", "VirtualBox\n", "", flags).as_deref(),
            Some("VirtualBox")
        );
        assert_eq!(
            v("Microsoft Corporation\n", "Virtual Machine\n", "", flags).as_deref(),
            Some("Hyper-V")
        );
        let linuxkit = "Linux version 6.10.14-linuxkit (root@buildkitsandbox) (gcc 13.2.1) #1 SMP";
        assert_eq!(
            v("", "", linuxkit, bare).as_deref(),
            Some("Docker Desktop (LinuxKit)")
        );
        // No firmware tables (Firecracker, some clouds): the CPU flag alone.
        assert_eq!(
            v("", "", "Linux version 6.1.0-28-amd64", flags).as_deref(),
            Some("a hypervisor")
        );
        // An arm64 guest says it on its Features line.
        assert_eq!(
            v("", "", "", "Features\t: fp asimd evtstrm hypervisor\n").as_deref(),
            Some("a hypervisor")
        );
        // A bare-metal machine: a real vendor, no flag.
        assert_eq!(
            v(
                "Dell Inc.\n",
                "PowerEdge R750\n",
                "Linux version 6.1.0",
                bare
            ),
            None
        );
    }

    #[test]
    fn shared_folders_are_the_vm_file_sharing_mounts() {
        let mounts = "overlay / overlay rw,relatime 0 0\n\
            /dev/vda1 /var/lib/data ext4 rw 0 0\n\
            mount0 /Users/ada virtiofs rw,relatime 0 0\n\
            grpcfuse /host_mnt/Users fuse.grpcfuse rw,nosuid 0 0\n\
            /mnt/lima-cidata /mnt/lima-cidata iso9660 ro 0 0\n\
            share /workspace\\040dir 9p rw,trans=virtio 0 0\n";
        let f = shared_folders(mounts);
        let got: Vec<(&str, &str)> = f
            .iter()
            .map(|s| (s.path.as_str(), s.fs_type.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("/Users/ada", "virtiofs"),
                ("/host_mnt/Users", "fuse.grpcfuse"),
                ("/workspace dir", "9p")
            ]
        );
    }

    #[test]
    fn a_laid_out_root_reads_as_docker_in_apple_virtualization() {
        let dir = tempfile::tempdir().expect("temp");
        let root = dir.path();
        for (p, text) in [
            (".dockerenv", ""),
            ("proc/1/cgroup", "0::/\n"),
            ("sys/class/dmi/id/sys_vendor", "Apple Inc.\n"),
            (
                "sys/class/dmi/id/product_name",
                "Apple Virtualization Generic Platform\n",
            ),
            ("proc/version", "Linux version 6.8.0-49-generic\n"),
            ("proc/cpuinfo", "processor\t: 0\nFeatures\t: fp asimd\n"),
            ("proc/mounts", "mount0 /Users/ada/code virtiofs rw 0 0\n"),
        ] {
            let f = root.join(p);
            std::fs::create_dir_all(f.parent().expect("parent")).expect("dirs");
            std::fs::write(f, text).expect("write");
        }
        let iso = read(root);
        assert_eq!(
            iso.describe().as_deref(),
            Some("a Docker container in a VM (Apple Virtualization)")
        );
        assert_eq!(iso.shared_folders[0].path, "/Users/ada/code");
        assert_eq!(iso.evidence.len(), 2, "{:?}", iso.evidence);
        // An empty root: nothing.
        let empty = tempfile::tempdir().expect("temp");
        assert!(read(empty.path()).is_none());
    }
}
