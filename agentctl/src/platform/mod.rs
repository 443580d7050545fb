//! What agentctl needs of the operating system, per platform: the user, the terminal's raw
//! mode and size, keys from stdin, Ctrl-C, and detaching the daemon it starts. One
//! implementation per platform with the same functions; the rest of agentctl names no `libc`,
//! `windows_sys` or `std::os::unix` for these.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;

/// How often the key reader looks at its stop flag while no key arrives: bounds how long it
/// outlives the prompt (the runtime waits for it at exit).
const KEY_POLL_MS: u32 = 100;

/// The standard stream whose terminal is measured.
#[derive(Clone, Copy, Debug)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// The terminal's escape sequence for a Windows console key that types no character (its
/// virtual-key code), so the readers of keys (the picker, forms) see arrows and pages as they
/// do on a Unix terminal. None for other keys (Shift, function keys…), which are dropped.
#[cfg_attr(not(windows), allow(dead_code))]
fn console_key_sequence(virtual_key: u16) -> Option<&'static [u8]> {
    Some(match virtual_key {
        0x21 => b"\x1b[5~", // VK_PRIOR (Page Up)
        0x22 => b"\x1b[6~", // VK_NEXT (Page Down)
        0x23 => b"\x1b[F",  // VK_END
        0x24 => b"\x1b[H",  // VK_HOME
        0x25 => b"\x1b[D",  // VK_LEFT
        0x26 => b"\x1b[A",  // VK_UP
        0x27 => b"\x1b[C",  // VK_RIGHT
        0x28 => b"\x1b[B",  // VK_DOWN
        0x2E => b"\x1b[3~", // VK_DELETE
        _ => return None,
    })
}

#[cfg(test)]
mod console_key_tests {
    use super::console_key_sequence;

    #[test]
    fn arrows_and_pages_become_the_terminal_sequences_and_shift_is_dropped() {
        assert_eq!(console_key_sequence(0x26), Some(&b"\x1b[A"[..]));
        assert_eq!(console_key_sequence(0x28), Some(&b"\x1b[B"[..]));
        assert_eq!(console_key_sequence(0x21), Some(&b"\x1b[5~"[..]));
        assert_eq!(console_key_sequence(0x10), None, "Shift");
    }
}
