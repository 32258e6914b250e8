#![no_main]
// cargo +nightly fuzz run sshconfig — see fuzz/run.sh.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    headroom_core::fuzzing::run("sshconfig", data);
});
