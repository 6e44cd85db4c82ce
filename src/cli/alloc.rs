//! The global allocator of the binary, of the Python extension and of the benchmark's decoding floor
//! (`examples/decode_model.rs`): mimalloc, asked the way a C program asks it.
//!
//! `mimalloc::MiMalloc` hands every request to `mi_malloc_aligned`, even for the alignment plain `mi_malloc` gives
//! anyway. In mimalloc 3 that call takes its fast path only while the size's page has a free block at hand;
//! otherwise, for a block size that is not a power of two (24, 48, 96 bytes: most `String`s and `Vec`s), it
//! over-allocates `size + alignment - 1` bytes from the next size class up. A check of 100,000 nodes made a third
//! of its three million allocations that way (callgrind: `mi_theap_malloc_zero_aligned_at_overalloc`, 990,019
//! calls): slower, and larger blocks, so more fresh pages to fault in. `mi_malloc` has no such detour, and its
//! blocks are word-aligned (every size class is a multiple of the word, in word-aligned pages); larger alignments
//! still go to the aligned calls.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// mimalloc as the global allocator: `#[global_allocator] static GLOBAL: Mimalloc = Mimalloc;`.
pub struct Mimalloc;

/// The alignment every mimalloc block has.
const BLOCK_ALIGN: usize = std::mem::size_of::<usize>();

// SAFETY: each call is mimalloc's for the layout: plain calls where every block is aligned enough, aligned calls
// otherwise; every pointer mimalloc hands out is freed or resized by mimalloc.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match layout.align() <= BLOCK_ALIGN {
            true => mi::mi_malloc(layout.size()) as *mut u8,
            false => mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8,
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match layout.align() <= BLOCK_ALIGN {
            true => mi::mi_zalloc(layout.size()) as *mut u8,
            false => mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8,
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi::mi_free(ptr as *mut c_void);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match layout.align() <= BLOCK_ALIGN {
            true => mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8,
            false => mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size up to a few pages at every alignment up to 64: aligned, writable, kept through realloc, zeroed
    /// where asked. Many blocks of each size are live at once, so that blocks from the middle of pages are seen.
    #[test]
    fn blocks_have_the_alignment_their_layout_asks_for() {
        for align in [1, 2, 4, 8, 16, 32, 64] {
            for size in (1..300).chain([1000, 4096, 70_000]) {
                let layout = Layout::from_size_align(size, align).unwrap();
                let blocks: Vec<*mut u8> = (0..20).map(|_| unsafe { Mimalloc.alloc(layout) }).collect();
                for &p in &blocks {
                    assert!(!p.is_null() && (p as usize).is_multiple_of(align), "size {size}, align {align}: {p:p}");
                    unsafe { p.write_bytes(0xA5, size) };
                }
                for p in blocks {
                    let grown = unsafe { Mimalloc.realloc(p, layout, size * 3) };
                    assert!((grown as usize).is_multiple_of(align), "realloc to {} at align {align}", size * 3);
                    assert_eq!(unsafe { *grown.add(size - 1) }, 0xA5, "realloc keeps the contents");
                    unsafe { Mimalloc.dealloc(grown, Layout::from_size_align(size * 3, align).unwrap()) };
                }
                let zeroed = unsafe { Mimalloc.alloc_zeroed(layout) };
                assert!((zeroed as usize).is_multiple_of(align));
                assert!((0..size).all(|i| unsafe { *zeroed.add(i) } == 0), "alloc_zeroed of {size} bytes");
                unsafe { Mimalloc.dealloc(zeroed, layout) };
            }
        }
    }
}
