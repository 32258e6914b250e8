//! Telling an out-of-memory failure from other failures, by the messages libtorch and the OS give.

use crate::protocol::PointStatus;

/// Phrases that mean the device or host ran out of memory, lower-cased: CUDA's
/// `CUDA out of memory` and `CUDA error: out of memory`, MPS's `MPS backend out of memory`,
/// the CPU allocator's `DefaultCPUAllocator: can't allocate memory` / `not enough memory`.
const OOM_PHRASES: [&str; 4] = [
    "out of memory",
    "can't allocate memory",
    "not enough memory",
    "std::bad_alloc",
];

/// `Oom` when `message` says memory ran out, else `Error`.
pub fn classify(message: &str) -> PointStatus {
    let m = message.to_ascii_lowercase();
    if OOM_PHRASES.iter().any(|p| m.contains(p)) {
        PointStatus::Oom
    } else {
        PointStatus::Error
    }
}

/// The first line of a libtorch error that says what happened, without the wrapping a panic in
/// tch adds (`called \`Result::unwrap()\` on an \`Err\` value: Torch("...")`) or its C++ backtrace.
pub fn headline(message: &str) -> String {
    let mut m = message;
    if let Some(i) = m.find("Torch(\"") {
        m = &m[i + "Torch(\"".len()..];
    }
    loop {
        let before = m.len();
        for prefix in ["libtorch: ", "Internal torch error: ", "RuntimeError: "] {
            m = m.trim_start_matches(prefix);
        }
        if m.len() == before {
            break;
        }
    }
    // Debug-formatted messages carry escaped newlines.
    let unescaped = m.replace("\\n", "\n");
    let line = unescaped
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("Exception raised from"))
        .unwrap_or("");
    let line = line.trim_end_matches("\")").trim_end_matches('"');
    line.chars().take(400).collect()
}

/// The operators PyTorch reports falling back from MPS to the CPU in `line`
/// (`The operator 'aten::foo' is not currently supported on the MPS backend and will fall back`).
pub fn fallback_op(line: &str) -> Option<String> {
    if !line.contains("not currently supported on the MPS backend") {
        return None;
    }
    let start = line.find("operator '")? + "operator '".len();
    let len = line[start..].find('\'')?;
    Some(line[start..start + len].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(text: &str) -> String {
        text.lines().skip(1).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn real_mps_oom_messages_are_oom() {
        for text in [
            include_str!("../../headroom-core/tests/fixtures/macos/torch_mps_oom_gib_comfyui.txt"),
            include_str!(
                "../../headroom-core/tests/fixtures/macos/torch_mps_oom_runtimeerror_m2.txt"
            ),
            include_str!(
                "../../headroom-core/tests/fixtures/macos/torch_mps_oom_gb_macos13_32gb.txt"
            ),
        ] {
            assert_eq!(classify(&fixture(text)), PointStatus::Oom, "{text}");
        }
    }

    #[test]
    fn cuda_and_cpu_oom_and_other_errors() {
        let cuda = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.81 GiB";
        assert_eq!(classify(cuda), PointStatus::Oom);
        let cpu = "[enforce fail at alloc_cpu.cpp:119] data. DefaultCPUAllocator: not enough memory: you tried to allocate 1099511627776 bytes.";
        assert_eq!(classify(cpu), PointStatus::Oom);
        let shape = "mat1 and mat2 shapes cannot be multiplied (1x10 and 784x1024)";
        assert_eq!(classify(shape), PointStatus::Error);
        let mps_unimpl = include_str!(
            "../../headroom-core/tests/fixtures/macos/torch_mps_notimplemented_no_fallback.txt"
        );
        assert_eq!(classify(&fixture(mps_unimpl)), PointStatus::Error);
    }

    #[test]
    fn headline_drops_the_backtrace() {
        let msg = "Torch(\"CUDA out of memory. Tried to allocate 20.00 MiB\nException raised from malloc at x.cpp:1\n";
        assert_eq!(
            headline(msg),
            "CUDA out of memory. Tried to allocate 20.00 MiB"
        );
    }
}
