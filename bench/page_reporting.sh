# Sourced by bench/run.sh and bench/write_path.sh (bash, with `set -euo pipefail`).
#
# Free page reporting (virtio-balloon; the Firecracker VMs this bench was run on have it): the guest hands the host
# every free block of `page_reporting_order` or more, and the host takes its memory back. A process that faults such
# a block in again waits for the host to back it: check of 800,000 nodes took 0.19 s or 0.3-0.5 s at random, with the
# same page faults and the difference all system time. That is the VM's cost, not the program's, and it fell on
# whichever contender ran after a larger one had freed its memory. While the bench runs, the order is set past the
# largest there is (11: no block is reported), and set back when it ends. Each part records what it found
# (page_reporting=held|kept|none) and how much was reported since the bench started (reported_kib, 0 when held).
# BENCH_PAGE_REPORTING=keep leaves the setting alone.
page_reporting=none
pr_dir=/sys/module/page_reporting/parameters
reported_kib() { cat "$pr_dir/reported_kib" 2>/dev/null || echo 0; }
if [[ -r $pr_dir/page_reporting_order ]]; then
    page_reporting=kept
    pr_was="$(cat "$pr_dir/page_reporting_order")"
    if [[ ${BENCH_PAGE_REPORTING:-hold} == hold ]] && (echo 11 >"$pr_dir/page_reporting_order") 2>/dev/null; then
        page_reporting=held
        trap 'echo "$pr_was" >"$pr_dir/page_reporting_order"' EXIT
    fi
fi
reported_at_start="$(reported_kib)"
