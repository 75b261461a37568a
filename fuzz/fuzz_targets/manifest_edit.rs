#![no_main]
//! Fuzz target `manifest_edit`: see `shale_fuzz::manifest_edit`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| shale_fuzz::run("manifest_edit", data));
