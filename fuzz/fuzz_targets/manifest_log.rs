#![no_main]
//! Fuzz target `manifest_log`: see `shale_fuzz::manifest_log`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| shale_fuzz::run("manifest_log", data));
