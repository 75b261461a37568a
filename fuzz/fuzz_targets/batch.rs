#![no_main]
//! Fuzz target `batch`: see `shale_fuzz::batch`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| shale_fuzz::run("batch", data));
