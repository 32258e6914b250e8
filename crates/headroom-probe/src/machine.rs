//! Names of the machine's parts, read from what the OS exposes: the CPU brand and NVIDIA GPU
//! models. Pure parsers plus thin readers.

/// The `model name` of the first processor in `/proc/cpuinfo` text.
pub fn parse_cpuinfo_model(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "model name").then(|| v.trim().to_owned())
    })
}

/// The `Model:` line of `/proc/driver/nvidia/gpus/<bus>/information` text.
pub fn parse_nvidia_information(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "Model").then(|| v.trim().to_owned())
    })
}

/// The value `sysctl -n NAME` printed, trimmed; `None` when it printed nothing.
pub fn parse_sysctl_value(text: &str) -> Option<String> {
    let v = text.trim();
    (!v.is_empty()).then(|| v.to_owned())
}

/// The CPU's brand string.
pub fn cpu_brand() -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        parse_cpuinfo_model(&std::fs::read_to_string("/proc/cpuinfo").ok()?)
    }
    #[cfg(target_os = "macos")]
    {
        crate::child::tool_stdout("/usr/sbin/sysctl", &["-n", "machdep.cpu.brand_string"])
            .as_deref()
            .and_then(parse_sysctl_value)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        None
    }
}

/// The model name of NVIDIA GPU number `index` (in PCI bus order, as CUDA orders them by
/// default only when `CUDA_DEVICE_ORDER=PCI_BUS_ID`; usually the same on one-GPU hosts).
pub fn nvidia_gpu_name(index: usize) -> Option<String> {
    let mut dirs: Vec<_> = std::fs::read_dir("/proc/driver/nvidia/gpus")
        .ok()?
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    let text = std::fs::read_to_string(dirs.get(index)?.join("information")).ok()?;
    parse_nvidia_information(&text)
}

/// This machine's host name.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names() {
        let cpu = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
        assert_eq!(
            parse_cpuinfo_model(cpu).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        let gpu = "Model: \t\t NVIDIA H200\nIRQ:   \t\t 0\nGPU UUID: \t GPU-abc\n";
        assert_eq!(
            parse_nvidia_information(gpu).as_deref(),
            Some("NVIDIA H200")
        );
    }
}
