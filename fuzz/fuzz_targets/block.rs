#![no_main]
//! Fuzz target `block`: see `shale_fuzz::block`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| shale_fuzz::run("block", data));
