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
//!
//! Blocks of 85 to 512 KiB get pages of their own from the OS ([`own_pages`]): mimalloc 3 puts each size class of
//! them in a 4 MiB page of its own, whose first touch faults in a fresh 2 MiB huge page. A check uses a handful of
//! such sizes once each (a flag vector, a hash table, a slot table): a fresh huge page each, most of it never used.
//! Only where the binary asks for it ([`large_page_blocks_get_pages_of_their_own`]): a long-lived host of the Python
//! extension has those pages warm after its first call, and would map and unmap such blocks on every one.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

use libmimalloc_sys as mi;

/// mimalloc as the global allocator: `#[global_allocator] static GLOBAL: Mimalloc = Mimalloc;`.
pub struct Mimalloc;

/// The alignment every mimalloc block has.
const BLOCK_ALIGN: usize = std::mem::size_of::<usize>();

/// The largest block mimalloc 3 puts in a 512 KiB "medium" page (`MI_MEDIUM_MAX_OBJ_SIZE` in its `types.h`):
/// larger ones, up to [`LARGE_MAX`], go in "large" pages of 4 MiB, one per size class.
const MEDIUM_MAX: usize = ((512 << 10) - (4 << 10)) / 6;
/// The largest block mimalloc 3 puts in a 4 MiB "large" page (`MI_LARGE_MAX_OBJ_SIZE`); larger blocks get a page of
/// their own, packed beside the others in the arena.
const LARGE_MAX: usize = 512 << 10;
/// An alignment above mimalloc's largest in-arena one (`MI_PAGE_MAX_OVERALLOC_ALIGN`, 64 KiB): a block asked with it
/// is mapped from the OS on its own, and unmapped when freed.
const OWN_PAGES_ALIGN: usize = 128 << 10;

/// Whether a block of `size` bytes gets pages of its own: one mimalloc would put in a "large" page. mimalloc's huge
/// page (THP) advice covers its arena only, so such a block is faulted in 4 KiB at a time, as far as it is used,
/// and given back when freed. Each size class of these in the arena costs a fresh 2 MiB huge page at its first
/// touch (~200 us to clear), however little of it is used: a check of 100,000 nodes touched 23 huge pages where
/// decoding alone touches 15, four of them for one table each. The size class, not the request, decides where
/// mimalloc puts a block, hence `mi_good_size`.
#[inline]
fn own_pages(size: usize) -> bool {
    // SAFETY: `mi_good_size` only computes a size class.
    OWN_PAGES.load(Ordering::Relaxed) && in_large_page_range(size) && unsafe { mi::mi_good_size(size) } > MEDIUM_MAX
}

/// Whether [`own_pages`] gives any block pages of its own: once the binary asked, at its start.
static OWN_PAGES: AtomicBool = AtomicBool::new(false);

/// From now on, blocks mimalloc would put in its 4 MiB "large" pages get pages of their own ([`own_pages`]): for a
/// process that runs one command and ends (the binary), whose each such page would be a fresh huge page to clear.
/// Blocks handed out before are freed and resized as ever.
pub fn large_page_blocks_get_pages_of_their_own() {
    OWN_PAGES.store(true, Ordering::Relaxed);
}

/// Whether `size` is in the range where [`own_pages`] asks mimalloc for the size class: above 64 KiB (every block up
/// to it is in a small or medium page) and up to [`LARGE_MAX`]. One compare: the only cost every other block pays.
#[inline(always)]
fn in_large_page_range(size: usize) -> bool {
    size.wrapping_sub((64 << 10) + 1) < LARGE_MAX - (64 << 10)
}

/// A block in [`in_large_page_range`]: out of line, so that the common path stays a compare and a jump to
/// mimalloc (inline, its call kept registers saved on every allocation: `fold` of 100,000 nodes, +7.7 M
/// instructions).
/// # Safety
/// As [`GlobalAlloc::alloc`] for a block of `size` bytes aligned to at most [`BLOCK_ALIGN`].
#[cold]
#[inline(never)]
unsafe fn alloc_in_range(size: usize, zeroed: bool) -> *mut u8 {
    match (own_pages(size), zeroed) {
        (true, true) => mi::mi_zalloc_aligned(size, OWN_PAGES_ALIGN) as *mut u8,
        (true, false) => mi::mi_malloc_aligned(size, OWN_PAGES_ALIGN) as *mut u8,
        (false, true) => mi::mi_zalloc(size) as *mut u8,
        (false, false) => mi::mi_malloc(size) as *mut u8,
    }
}

/// [`GlobalAlloc::realloc`] to a size in [`in_large_page_range`] (see [`alloc_in_range`]).
/// # Safety
/// As [`GlobalAlloc::realloc`] of a block aligned to at most [`BLOCK_ALIGN`].
#[cold]
#[inline(never)]
unsafe fn realloc_in_range(ptr: *mut u8, new_size: usize) -> *mut u8 {
    match own_pages(new_size) {
        // Kept in place where the block is large enough and aligned so already (mimalloc checks both).
        true => mi::mi_realloc_aligned(ptr as *mut c_void, new_size, OWN_PAGES_ALIGN) as *mut u8,
        false => mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8,
    }
}

// SAFETY: each call is mimalloc's for the layout: plain calls where every block is aligned enough, aligned calls
// otherwise; every pointer mimalloc hands out is freed or resized by mimalloc.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match layout.align() <= BLOCK_ALIGN {
            // Most blocks: mimalloc's small path straight away, where `mi_malloc` calls on to it after a test of
            // the size (~6 of the ~35 instructions a block).
            true if layout.size() <= mi::MI_SMALL_SIZE_MAX => mi::mi_malloc_small(layout.size()) as *mut u8,
            true if in_large_page_range(layout.size()) => alloc_in_range(layout.size(), false),
            true => mi::mi_malloc(layout.size()) as *mut u8,
            false => mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8,
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match layout.align() <= BLOCK_ALIGN {
            // Fresh pages from the OS are zero already: mimalloc clears none of them.
            true if in_large_page_range(layout.size()) => alloc_in_range(layout.size(), true),
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
            true if in_large_page_range(new_size) => realloc_in_range(ptr, new_size),
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
            for size in (1..300).chain([1000, 4096, 70_000, 90_000, 300_000, LARGE_MAX, LARGE_MAX + 1]) {
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

    /// Where blocks of each size go: the sizes mimalloc puts in its 4 MiB "large" pages get pages of their own (a
    /// block at the start of its own mapping, aligned as asked), those below and above stay in the arena.
    #[test]
    fn only_the_sizes_of_large_pages_get_pages_of_their_own() {
        large_page_blocks_get_pages_of_their_own();
        assert!(!own_pages(4096) && !own_pages(64 << 10), "small and medium pages hold these");
        assert!(!own_pages(LARGE_MAX + 1), "a page of its own in the arena already");
        for size in [MEDIUM_MAX + 1, 100_000, 200_000, LARGE_MAX] {
            assert!(own_pages(size), "{size}");
            let layout = Layout::from_size_align(size, 8).unwrap();
            let p = unsafe { Mimalloc.alloc(layout) };
            assert!((p as usize).is_multiple_of(OWN_PAGES_ALIGN), "{size} bytes at {p:p}");
            unsafe { Mimalloc.dealloc(p, layout) };
        }
    }

    /// A block with pages of its own keeps its contents when it grows, shrinks, and moves into or out of the range
    /// (to a block of the arena and back), and is zeroed when asked.
    #[test]
    fn blocks_with_pages_of_their_own_keep_their_contents_through_realloc() {
        large_page_blocks_get_pages_of_their_own();
        let layout = Layout::from_size_align(100_000, 8).unwrap();
        let p = unsafe { Mimalloc.alloc_zeroed(layout) };
        assert!((0..100_000).all(|i| unsafe { *p.add(i) } == 0));
        unsafe { p.write_bytes(0x5A, 100_000) };
        let mut p = p;
        let mut size = 100_000;
        for new_size in [400_000, 2_000_000, 300_000, 50_000, 150_000, 90_000] {
            p = unsafe { Mimalloc.realloc(p, Layout::from_size_align(size, 8).unwrap(), new_size) };
            let kept = size.min(new_size);
            assert!((0..kept).all(|i| unsafe { *p.add(i) } == 0x5A), "{size} -> {new_size}");
            unsafe { p.add(kept).write_bytes(0x5A, new_size - kept) };
            size = new_size;
        }
        unsafe { Mimalloc.dealloc(p, Layout::from_size_align(size, 8).unwrap()) };
    }
}
