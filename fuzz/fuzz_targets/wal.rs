#![no_main]
//! Fuzz target `wal`: see `shale_fuzz::wal`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| shale_fuzz::run("wal", data));
