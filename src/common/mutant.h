/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mutant.h - mutation sites: every flush, barrier and commit-ordering
 * store of the runtimes (tx/) and the allocator (heap/) has an id, so that
 * a test build can disable exactly one of them and show that a crash
 * checker notices (STYLE.md: a checker that has never caught a bug proves
 * nothing).
 *
 * Builds. The library pmtx_mut is compiled from the same sources as pmtx
 * with PMTX_MUTATION defined, and only there can a site be disabled. In
 * pmtx (release) the wrappers below expand to the original call, and
 * MUT_ON(id) is the constant 0: nothing is read, nothing is skipped.
 *
 * Choosing the site. At most one site is disabled per process: the id in
 * pmtx__mutant, set by pmtx__mutant_set() or, once, from the environment
 * variable PMTX_MUTANT=<name, symbolic id or number> when the first region
 * is created or opened (pmtx__mutant_init, called by recovery). A call to
 * pmtx__mutant_set() consumes the variable first, so it always wins.
 * Checking a site costs one load and one compare.
 *
 * What disabling a site does, and nothing else:
 *   flush site    the flush is not issued                      (MUT_FLUSH)
 *   barrier site  the barrier is not issued; it reports 0      (MUT_BARRIER,
 *                                                               MUT_ORDER)
 *   nt-copy site  the bytes are copied with plain stores       (MUT_COPY_NT)
 *   store site    the store is not made                        (MUT_SKIP)
 *   give-back site the journal's step is left out (the compare, the
 *                 write protection) or made early (the give-back before
 *                 the region file's fdatasync)                 (MUT_ON)
 * A store site is a store whose value only recovery reads (check words,
 * descriptor marks, the log tail): skipping it changes nothing a running
 * program sees, only what a crash leaves behind. So the per-thread
 * counters drop by exactly the skipped flushes and barriers, which is how
 * tests/test_mutant.c shows that each site is live.
 *
 * Site granularity. A call site inside a helper shared by several callers
 * is one site when the callers need the same thing from it (the record
 * flush of log_put for the COMMIT of every runtime, heap_apply for every
 * allocation-log entry); it is split by caller, through a site argument,
 * when the callers' invariants differ (the IDLE marks of undo abort, of
 * the allocation log, of redo retirement and of recovery). The description
 * of each site says which paths reach it.
 *
 * Adding a site: add its line here, wrap the call, and add its case to
 * tests/test_mutant.c, which fails while a site has no case. Ids are
 * positions in the list, so scripts should use names.
 *
 * The containers' sites (src/containers) are the flushes of cont.h C2:
 * a fresh block filled with plain stores must be durable by the commit
 * that links it, which no pmtx call forces (cx_flush_site). The
 * mutation test hunts them with the containers' explorer workloads
 * (tools/crashtest/wl_containers.c).
 */
#ifndef PMTX_MUTANT_H
#define PMTX_MUTANT_H

#include "util.h"

/* X(id, name, what it persists or orders -- and what breaks without it) */
#define PMTX_MUTANTS(X)                                                      \
	/* ---- tx.c: shared by every runtime ---- */                        \
	X(MUT_TX_RUNNING_MARK, "tx.running_mark",                            \
	  "store statever := (version, RUNNING) before the first barrier "   \
	  "(T2); else recovery ignores the running transaction's log")        \
	X(MUT_TX_RUNNING_FLUSH, "tx.running_flush",                          \
	  "flush of the RUNNING statever; else a crash may find durable "    \
	  "records or COMMIT under an IDLE descriptor and ignore them")       \
	X(MUT_TX_COVER_FLUSH, "tx.cover_flush",                              \
	  "retire cover (R3): flush other descriptors' IDLE marks before a " \
	  "commit barrier; else a retired redo log may be replayed over "    \
	  "newer data (D4a)")                                                 \
	X(MUT_TX_ZALLOC_FLUSH, "tx.zalloc_flush",                            \
	  "flush of the zeroes pmtx_zalloc wrote (durable at commit); else " \
	  "a committed zeroed block may hold old bytes after a crash")        \
	X(MUT_API_FLUSH, "api.flush",                                        \
	  "pmtx_flush (naked stores, cache-line transactions via "           \
	  "pmtx_cltx.h); else those stores may not be durable")               \
	X(MUT_API_BARRIER, "api.barrier",                                    \
	  "pmtx_barrier (naked persistence, cache-line transaction commit "  \
	  "and init); else earlier flushes are not waited for")               \
	X(MUT_API_PERSIST_FLUSH, "api.persist_flush",                        \
	  "the flush of pmtx_persist; else the range may not be durable "    \
	  "when it returns")                                                  \
	X(MUT_API_PERSIST_BARRIER, "api.persist_barrier",                    \
	  "the barrier of pmtx_persist; else the range may not be durable "  \
	  "when it returns")                                                  \
	X(MUT_API_COPY_NT, "api.copy_nt",                                    \
	  "pmtx_memcpy_nt bypasses the cache; disabled, it is a plain "      \
	  "memcpy whose bytes the next barrier does not make durable")        \
	/* ---- log.c: chunk growth (every log: records and alloc log) ---- */ \
	X(MUT_LOG_GROW_CHUNK_FLUSH, "log.grow_chunk_flush",                  \
	  "flush of a new chunk's header before it is linked (L4); else a "  \
	  "durable link may lead to garbage (open fails: corrupt)")           \
	X(MUT_LOG_GROW_CHUNK_BARRIER, "log.grow_chunk_barrier",              \
	  "orders a new chunk's header before the link to it (L4); else a "  \
	  "durable link may lead to garbage (open fails: corrupt)")           \
	X(MUT_LOG_GROW_LINK_FLUSH, "log.grow_link_flush",                    \
	  "flush of the link to a new chunk; else records written there may "\
	  "be unreachable after a crash (torn rollback, lost commit)")        \
	X(MUT_LOG_GROW_LINK_BARRIER, "log.grow_link_barrier",                \
	  "orders the link before the chunk's heap bit and its records; "    \
	  "else records in the chunk may be unreachable after a crash")       \
	/* ---- log.c: records (log_put, log_put_mark) ---- */                \
	X(MUT_UNDO_REC_CHECK, "undo.rec_check",                              \
	  "checksum word of an undo record; else the record never "          \
	  "validates and a crash leaves its range not rolled back")           \
	X(MUT_UNDO_REC_FLUSH, "undo.rec_flush",                              \
	  "flush of an undo record before its barrier (U1); else the range " \
	  "is stored to before its old bytes are durable")                    \
	X(MUT_UNDO_MARK_STORE, "undo.mark_store",                            \
	  "mark of a large undo record, after its body is durable (L1); "    \
	  "else the record never validates and is not rolled back")           \
	X(MUT_UNDO_MARK_FLUSH, "undo.mark_flush",                            \
	  "flush of a large undo record's mark; else the range is stored "   \
	  "to before its record is valid on media")                           \
	X(MUT_REDO_REC_FLUSH, "redo.rec_flush",                              \
	  "flush of a redo record before the commit barrier (D1); else a "   \
	  "torn record voids a transaction that commit reported durable")     \
	X(MUT_COW_REC_CHECK, "cow.rec_check",                                \
	  "checksum word of a copy-on-write record; else recovery stops "    \
	  "before the COMMIT and loses a committed transaction")              \
	X(MUT_COW_REC_FLUSH, "cow.rec_flush",                                \
	  "flush of a copy-on-write record before barrier 1; else recovery " \
	  "may stop before the COMMIT and lose a committed transaction")      \
	X(MUT_LOG_COMMIT_CHECK, "log.commit_check",                          \
	  "checksum word of the COMMIT record (undo, redo, cow); else a "    \
	  "committed transaction is rolled back or lost after a crash")       \
	X(MUT_LOG_COMMIT_FLUSH, "log.commit_flush",                          \
	  "flush of the COMMIT record (undo, redo, cow) before the barrier " \
	  "that makes the transaction durable; else it may be lost")          \
	/* ---- alog.c: the allocation log (undo, redo, cow) ---- */          \
	X(MUT_ALOG_FLUSH, "alog.flush",                                      \
	  "allocation-log entries durable before the commit barrier (A2); "  \
	  "else recovery replays stale entries into the heap metadata")       \
	X(MUT_ALOG_APPLY_BARRIER, "alog.apply_barrier",                      \
	  "(iii) heap metadata durable before IDLE (A3; undo, cow); else a " \
	  "crash may lose a committed allocation or free")                    \
	X(MUT_ALOG_IDLE_MARK, "alog.idle_mark",                              \
	  "store IDLE after (iii) (undo, cow); else recovery replays the "   \
	  "allocation log over later frees (A3)")                             \
	X(MUT_ALOG_IDLE_FLUSH, "alog.idle_flush",                            \
	  "flush of IDLE after (iii) (undo, cow); else freed blocks are "    \
	  "reused while a crash still replays the log (A3)")                  \
	X(MUT_ALOG_IDLE_BARRIER, "alog.idle_barrier",                        \
	  "(iv) IDLE durable before freed blocks return to DRAM (A3); else " \
	  "a reused block can be freed again by a replay")                    \
	/* ---- undo.c ---- */                                                \
	X(MUT_UNDO_REC_BARRIER, "undo.rec_barrier",                          \
	  "an undo record durable before its range is stored to (U1); else " \
	  "a crash may leave the range torn with nothing to roll back")       \
	X(MUT_UNDO_MARK_BARRIER, "undo.mark_barrier",                        \
	  "a large record's mark durable before the store in place; else a " \
	  "crash may leave the range torn with no valid record")              \
	X(MUT_UNDO_DATA_FLUSH, "undo.data_flush",                            \
	  "flush of every written line before commit (i) (U3); else a "      \
	  "durable COMMIT may cover data that is not durable")                \
	X(MUT_UNDO_DATA_BARRIER, "undo.data_barrier",                        \
	  "commit (i): written data durable before the COMMIT record (U3); " \
	  "else a durable COMMIT may cover torn data")                        \
	X(MUT_UNDO_COMMIT_BARRIER, "undo.commit_barrier",                    \
	  "commit (ii): COMMIT durable before commit returns; else a crash " \
	  "after pmtx_commit rolls the transaction back")                     \
	X(MUT_UNDO_COMMITTED_MARK, "undo.committed_mark",                    \
	  "commit (ii) without allocations: store COMMITTED (U6); else the " \
	  "next transaction's records may hide this one's COMMIT")           \
	X(MUT_UNDO_COMMITTED_FLUSH, "undo.committed_flush",                  \
	  "flush of the COMMITTED mark (U6)")                                \
	X(MUT_UNDO_NAKED_BARRIER, "undo.naked_barrier",                      \
	  "commit of an undo transaction that only made naked flushes; "     \
	  "else they are not durable when commit returns")                    \
	X(MUT_UNDO_ABORT_FLUSH, "undo.abort_flush",                          \
	  "flush of every range restored by abort (U4); else IDLE may be "   \
	  "durable before the restored data: a torn abort")                   \
	X(MUT_UNDO_ABORT_BARRIER, "undo.abort_barrier",                      \
	  "restored data durable before IDLE (U4); else a crash may keep "   \
	  "the aborted writes with the log already retired")                  \
	X(MUT_UNDO_ABORT_IDLE_MARK, "undo.abort_idle_mark",                  \
	  "store IDLE after an abort (U4); else recovery rolls the aborted " \
	  "transaction back again over newer data")                           \
	X(MUT_UNDO_ABORT_IDLE_FLUSH, "undo.abort_idle_flush",                \
	  "flush of IDLE after an abort (U4); else recovery may roll the "   \
	  "aborted transaction back again over newer data")                   \
	X(MUT_UNDO_ABORT_IDLE_BARRIER, "undo.abort_idle_barrier",            \
	  "IDLE durable before abort returns (U4); else recovery may roll "  \
	  "the aborted transaction back again over newer data")               \
	X(MUT_UNDO_RECOVER_FLUSH, "undo.recover_flush",                      \
	  "recovery: flush of every range an undo log rolls back; else IDLE "\
	  "may be durable before the rolled-back data")                       \
	/* ---- redo.c (redo and redo-async) ---- */                          \
	X(MUT_REDO_BATCH_CHECK, "redo.batch_check",                          \
	  "batch checksum in the redo COMMIT record (D1); else recovery "    \
	  "never counts the log as committed and loses the transaction")      \
	X(MUT_REDO_COMMIT_BARRIER, "redo.commit_barrier",                    \
	  "step 1: records and COMMIT durable before data is stored in "     \
	  "place (D2); else a crash may keep half the stores, no COMMIT")     \
	X(MUT_REDO_DATA_FLUSH, "redo.data_flush",                            \
	  "redo step 2: flush of the lines applied in place; else IDLE may " \
	  "be durable before the data: a committed write is lost")            \
	X(MUT_REDO_APPLY_BARRIER, "redo.apply_barrier",                      \
	  "redo step 2: data and heap metadata durable before IDLE; else a " \
	  "crash after retirement may lose committed data")                   \
	X(MUT_REDO_NAKED_BARRIER, "redo.naked_barrier",                      \
	  "commit of a redo transaction that only made naked flushes; else " \
	  "they are not durable when commit returns")                         \
	X(MUT_REDO_NAKED_ORDER_BARRIER, "redo.naked_order_barrier",          \
	  "naked flushes of a redo transaction durable before its COMMIT "  \
	  "(D10); else a COMMIT may persist without a block's contents")     \
	X(MUT_REDO_IDLE_MARK, "redo.idle_mark",                              \
	  "store IDLE when a redo log is retired (sync commit and async "    \
	  "truncation); else recovery replays it over newer data")            \
	X(MUT_REDO_COVER_WAIT, "redo.cover_wait",                            \
	  "redo-async retires a transaction only after a later barrier of "  \
	  "the thread that flushed its data (D12); else IDLE may persist "   \
	  "before the data")                                                \
	X(MUT_REDO_TRUNC_DATA_FLUSH, "redo.trunc_data_flush",                \
	  "redo-async truncation: flush of the lines applied at commit; "    \
	  "else IDLE may be durable before the data")                         \
	X(MUT_REDO_TRUNC_BARRIER, "redo.trunc_barrier",                      \
	  "redo-async truncation: data durable, and the previous IDLE, "     \
	  "before this IDLE (D6); else retired logs lose committed data")     \
	X(MUT_REDO_RECOVER_FLUSH, "redo.recover_flush",                      \
	  "recovery: flush of every range a redo log replays; else IDLE "    \
	  "may be durable before the replayed data")                          \
	/* ---- redo.c: runtimes mixed in one region ---- */                \
	X(MUT_MIX_QUEUE_OWN, "mix.queue_own",                                \
	  "a redo log queued behind redo-async ones marks its objects "      \
	  "(D13); else an undo transaction over its data commits first, "    \
	  "and recovery replays the older log over it")                       \
	/* ---- cow.c ---- */                                                 \
	X(MUT_COW_NEW_FLUSH, "cow.new_flush",                                \
	  "pmtx_cow_new: flush of the new wrapper (durable at commit); else "\
	  "a committed wrapper may be garbage after a crash")                 \
	X(MUT_COW_PAYLOAD_FLUSH, "cow.payload_flush",                        \
	  "flush of a new payload before barrier 1; else a committed swap "  \
	  "may expose a payload that is not durable")                         \
	X(MUT_COW_WRAPPER_FLUSH, "cow.wrapper_flush",                        \
	  "flush of a written wrapper (next, old_backup) before barrier 1; " \
	  "else recovery cannot complete the swap (K5)")                      \
	X(MUT_COW_STAGE_BARRIER, "cow.stage_barrier",                        \
	  "barrier 1: payloads, wrappers, records, allocation log durable "  \
	  "before the COMMIT record; else a COMMIT may cover torn state")      \
	X(MUT_COW_COMMIT_BARRIER, "cow.commit_barrier",                      \
	  "barrier 2: COMMIT durable before cur is swapped; else a crash "   \
	  "may keep a swap of an uncommitted transaction (K4)")               \
	X(MUT_COW_SWAP_FLUSH, "cow.swap_flush",                              \
	  "flush of cur := next before barrier 3; else IDLE may be durable " \
	  "before the swap and a crash loses the write")                      \
	X(MUT_COW_NAKED_BARRIER, "cow.naked_barrier",                        \
	  "commit of a copy-on-write transaction that only made naked "      \
	  "flushes; else they are not durable when commit returns")           \
	X(MUT_COW_RECOVER_FLUSH, "cow.recover_flush",                        \
	  "recovery: flush of each cur := next a COMMIT completes (K5); "    \
	  "else IDLE may be durable before the swap")                         \
	/* ---- twin.c ---- */                                                \
	X(MUT_TWIN_MUTATING_MARK, "twin.mutating_mark",                      \
	  "store MUTATING before the first in-place store (TW2); else a "    \
	  "crash keeps part of an uncommitted transaction")                   \
	X(MUT_TWIN_MUTATING_FLUSH, "twin.mutating_flush",                    \
	  "flush of MUTATING (TW2); else in-place stores may persist while " \
	  "the state word still says IDLE")                                   \
	X(MUT_TWIN_MUTATING_BARRIER, "twin.mutating_barrier",                \
	  "MUTATING durable before the first in-place store (TW2); else a "  \
	  "crash keeps part of an uncommitted transaction")                   \
	X(MUT_TWIN_DATA_FLUSH, "twin.data_flush",                            \
	  "flush of every line the transaction stored to (TW3); else "       \
	  "recovery copies stale data over the back copy: commit lost")       \
	X(MUT_TWIN_DATA_BARRIER, "twin.data_barrier",                        \
	  "data durable before COPYING (TW3), and with its seal the commit " \
	  "point of a small transaction (TW10); else recovery may copy "     \
	  "stale data over the back copy, or lose the commit")                \
	X(MUT_TWIN_SEAL_NT, "twin.seal_nt",                                  \
	  "a small transaction's seal written with non-temporal stores "     \
	  "(TW10); plain stores instead are not made durable by barrier "    \
	  "(b), the commit point: a crash after commit loses the commit")     \
	X(MUT_TWIN_COPYING_MARK, "twin.copying_mark",                        \
	  "store COPYING, the commit point (TW3); else a crash during the "  \
	  "back copy restores a half-copied back copy: torn")                 \
	X(MUT_TWIN_COPYING_FLUSH, "twin.copying_flush",                      \
	  "flush of COPYING; else a crash during the back copy restores a "  \
	  "half-copied back copy: torn")                                      \
	X(MUT_TWIN_COMMIT_BARRIER, "twin.commit_barrier",                    \
	  "COPYING durable before the back copy is written and before "      \
	  "commit returns (TW4); else torn or lost")                          \
	X(MUT_TWIN_BACK_COPY_NT, "twin.back_copy_nt",                        \
	  "the back copy's lines written with non-temporal stores (TW4); "   \
	  "plain stores instead are not made durable by barrier (d), so the "\
	  "next transaction's crash restores stale bytes: commit lost")       \
	X(MUT_TWIN_BACK_BARRIER, "twin.back_barrier",                        \
	  "back copy durable before the next MUTATING (TW4); else a crash "  \
	  "restores stale bytes: commit lost")                                \
	X(MUT_TWIN_IDLE_MARK, "twin.idle_mark",                              \
	  "store IDLE after a large commit, an abort, recovery, and at close "\
	  "after a small commit (TW4); only spares the next open a pass")     \
	X(MUT_TWIN_IDLE_FLUSH, "twin.idle_flush",                            \
	  "flush of IDLE at close and after recovery (TW4); only spares the "\
	  "next open a pass over the region")                                 \
	X(MUT_TWIN_ABORT_FLUSH, "twin.abort_flush",                          \
	  "abort: flush of the lines restored from the back copy (TW7); "    \
	  "else IDLE may persist over aborted bytes")                         \
	X(MUT_TWIN_ABORT_BARRIER, "twin.abort_barrier",                      \
	  "abort: restored lines durable before IDLE (TW7); else a crash "   \
	  "keeps an aborted transaction's bytes")                             \
	X(MUT_TWIN_RECOVER_FLUSH, "twin.recover_flush",                      \
	  "recovery: flush of the lines copied one way (TW8); else IDLE may "\
	  "persist before the repair")                                        \
	X(MUT_TWIN_RECOVER_REST, "twin.recover_rest",                        \
	  "recovery with an accepted seal: the back copy over every other "  \
	  "line that differs, flushed (TW13); else a crash keeps part of a " \
	  "transaction that stored under an earlier transaction's seal")      \
	X(MUT_TWIN_RECOVER_BARRIER, "twin.recover_barrier",                  \
	  "recovery: the copy durable before IDLE (TW8); else a crash after "\
	  "open loses the repair")                                            \
	X(MUT_TWIN_NAKED_FLUSH, "twin.naked_flush",                          \
	  "pmtx_flush/pmtx_persist outside a transaction: flush of the "     \
	  "back copy of the range (TW6); else a later crash restores the "   \
	  "old bytes")                                                        \
	X(MUT_TX_CLOSE_COVER_FLUSH, "tx.close_cover_flush",                  \
	  "close: flush of the redo IDLE marks no commit has covered yet "   \
	  "(tx.c R3); else the next process's commit can be durable while "  \
	  "an older log it overwrote is still live")                          \
	X(MUT_TX_CLOSE_COVER_BARRIER, "tx.close_cover_barrier",              \
	  "close: those IDLE marks durable before the open mark is cleared " \
	  "(tx.c R3)")                                                        \
	/* ---- recovery.c ---- */                                            \
	X(MUT_RECOVERY_SWEEP_FLUSH, "recovery.sweep_flush",                  \
	  "open: flush of what recovery reads, before it reads it (R4); "    \
	  "else after a process crash it decides from stores a power "       \
	  "failure may still lose")                                           \
	X(MUT_RECOVERY_SWEEP_BARRIER, "recovery.sweep_barrier",              \
	  "open: what recovery reads durable before it acts on it (R4)")     \
	X(MUT_RECOVERY_DATA_BARRIER, "recovery.data_barrier",                \
	  "recovery: rolled-back/forward data and heap durable before IDLE " \
	  "(R1); else a crash in recovery loses the repair")                  \
	X(MUT_RECOVERY_IDLE_MARK, "recovery.idle_mark",                      \
	  "recovery: store IDLE in each repaired descriptor; else the next " \
	  "open repairs again, over data written since")                      \
	X(MUT_RECOVERY_IDLE_FLUSH, "recovery.idle_flush",                    \
	  "recovery: flush of IDLE; else a later crash repairs again, over " \
	  "data written since")                                               \
	X(MUT_RECOVERY_IDLE_BARRIER, "recovery.idle_barrier",                \
	  "recovery: IDLE durable before open returns; else a later crash "  \
	  "repairs again, over data written since")                           \
	/* ---- heap.c: heap_apply, reached by every allocation path ---- */  \
	X(MUT_HEAP_LARGE_FLUSH, "heap.large_flush",                          \
	  "flush of a large run's info word (alloc log apply and replay, "   \
	  "log growth, chunk adoption); else the run may be lost or leaked")  \
	X(MUT_HEAP_INFO_FLUSH, "heap.info_flush",                            \
	  "flush of a small superblock's class word on allocation; else a "  \
	  "crash may leave bits set in a FREE superblock (corrupt heap)")     \
	X(MUT_HEAP_BITMAP_FLUSH, "heap.bitmap_flush",                        \
	  "flush of a block's allocation bit; else a committed allocation "  \
	  "or free may be lost after a crash (double allocation)")            \
	X(MUT_HEAP_REFLUSH_INFO, "heap.reflush_info",                        \
	  "redo-async truncation: flush again a superblock's info word; "    \
	  "else the truncation barrier may not cover it")                     \
	X(MUT_HEAP_REFLUSH_BITMAP, "heap.reflush_bitmap",                    \
	  "redo-async truncation: flush again a block's bitmap word; else "  \
	  "IDLE may be durable before the allocation bit")                    \
	/* ---- region.c: growth (G1) ---- */                                \
	X(MUT_REGION_GROW_FLUSH, "region.grow_flush",                        \
	  "flush of rstate.nsb after the file is extended; else a crash "    \
	  "may keep the old heap size while allocations in the new space "   \
	  "are committed (recovery rejects them: corrupt)")                   \
	X(MUT_REGION_GROW_BARRIER, "region.grow_barrier",                    \
	  "rstate.nsb durable before another thread may use the new space; " \
	  "else that thread's commit can be durable before the heap size")   \
	X(MUT_REGION_OPEN_MARK, "region.open_mark",                          \
	  "open: store rstate.open (G4); else the open after a kill -9 "      \
	  "skips the sweep (recovery.c R4) and decides from stores a power " \
	  "failure may still lose")                                           \
	/* ---- persist/journal.c, jdrop.c: a checkpoint gives back its     \
	 * pages' private copies (journal.c invariants 10-12) ---- */        \
	X(MUT_JOURNAL_DROP_AFTER_SYNC, "journal.drop_after_sync",            \
	  "pages given back only after the region file's fdatasync "        \
	  "succeeded (invariant 10); disabled, before it: after a failed "   \
	  "write-back a page reads the file's old bytes")                     \
	X(MUT_JOURNAL_DROP_COMPARE, "journal.drop_compare",                  \
	  "a page given back only if it equals the file's bytes (invariant " \
	  "11); else a store made after the checkpoint's copy is lost")       \
	X(MUT_JOURNAL_DROP_PROTECT, "journal.drop_protect",                  \
	  "the run write-protected while compared and given back "          \
	  "(invariant 12, jdrop.c D1); else a store racing it is lost")       \
	/* ---- containers: a fresh block filled with plain stores is     \
	 * flushed before the store that links it (cont.h C2) ---- */          \
	X(MUT_HMAP_CREATE_FLUSH, "hmap.create_flush",                        \
	  "flush of a new hash map's header (magic, seed, geometry); else "  \
	  "a committed map may read as no map after a crash")                 \
	X(MUT_HMAP_ENTRY_FLUSH, "hmap.entry_flush",                          \
	  "flush of a new entry before the link that names it (H2); else a " \
	  "committed key or value may be garbage after a crash")              \
	X(MUT_LIST_CREATE_FLUSH, "list.create_flush",                        \
	  "flush of a new list's header; else a committed list may read as " \
	  "no list after a crash")                                            \
	X(MUT_LIST_PUSH_HEAD_FLUSH, "list.push_head_flush",                  \
	  "push into a fresh chunk: flush of its header (magic, cap, "       \
	  "count, lo, hi, links); else a committed push may leave a chunk "  \
	  "the list refuses")                                                 \
	X(MUT_LIST_PUSH_DATA_FLUSH, "list.push_data_flush",                  \
	  "push into a fresh chunk: flush of the element; else a committed " \
	  "push may keep garbage bytes")                                      \
	X(MUT_LIST_SPLIT_DATA_FLUSH, "list.split_data_flush",                \
	  "chunk split: flush of each fresh chunk's elements; else a "       \
	  "committed split may lose elements' bytes")                         \
	X(MUT_LIST_SPLIT_HEAD_FLUSH, "list.split_head_flush",                \
	  "chunk split: flush of a fresh chunk's header once its next is "   \
	  "set; else a committed split may leave a chunk the list refuses")   \
	X(MUT_LIST_SPLIT_LAST_FLUSH, "list.split_last_flush",                \
	  "chunk split: flush of the last fresh chunk's header; else a "     \
	  "committed split may leave a chunk the list refuses")               \
	X(MUT_STR_MOVED_FLUSH, "str.moved_flush",                            \
	  "a string moved to a fresh block: flush of its bytes; else a "     \
	  "committed set or append may keep garbage bytes")                   \
	X(MUT_MAP_CREATE_FLUSH, "map.create_flush",                          \
	  "flush of a new ordered map's header; else a committed map may "   \
	  "read as no map after a crash")                                     \
	X(MUT_MAP_NODE_FLUSH, "map.node_flush",                              \
	  "flush of a fresh node (a split's right half, a new root, a "      \
	  "map's first leaf) before it is linked; else a committed split "   \
	  "may leave a node the map refuses")                                 \
	X(MUT_MAP_ITEM_FLUSH, "map.item_flush",                              \
	  "flush of a fresh item (a byte key, a value, a separator); else "  \
	  "a committed put may keep garbage bytes")                           \
	X(MUT_MAP_LOAD_FLUSH, "map.load_flush",                              \
	  "bulk load: flush of each fresh leaf; else a committed load may "  \
	  "leave leaves the map refuses")

enum pmtx_mutant_id {
	MUT_NONE = 0,
#define MUT_ENUM_(id, name, desc) id,
	PMTX_MUTANTS(MUT_ENUM_)
#undef MUT_ENUM_
	MUT_END_,
	MUT_INVALID = ~0u /* pmtx__mutant_lookup: no such site */
};
#define MUT_NSITES ((unsigned)MUT_END_ - 1)

#ifdef PMTX_MUTATION
extern unsigned pmtx__mutant;
#define MUT_ON(id)                                                           \
	(unlikely(__atomic_load_n(&pmtx__mutant, __ATOMIC_RELAXED) ==        \
	          (unsigned)(id)))
#define MUT_FLUSH(id, p, a, n)                                               \
	do {                                                                 \
		if (!MUT_ON(id))                                             \
			persist_flush((p), (a), (n));                        \
	} while (0)
#define MUT_BARRIER_KIND(id, p, kind)                                        \
	(MUT_ON(id) ? 0 : persist_barrier_kind((p), (kind)))
#define MUT_COPY_NT_KIND(id, p, dst, src, n, kind)                           \
	do {                                                                 \
		if (!MUT_ON(id)) {                                           \
			persist_copy_nt((p), (dst), (src), (n),              \
			                PMTX_TSK_##kind);                    \
		} else {                                                     \
			memcpy((dst), (src), (n));                           \
			TRACE_STORE((p), (dst), (n), kind);                  \
		}                                                            \
	} while (0)
#else
/* The original code; sizeof checks that id names a site, at no cost. */
#define MUT_ON(id) (0 && (id))
#define MUT_FLUSH(id, p, a, n) ((void)sizeof(id), persist_flush((p), (a), (n)))
#define MUT_BARRIER_KIND(id, p, kind)                                        \
	((void)sizeof(id), persist_barrier_kind((p), (kind)))
#define MUT_COPY_NT_KIND(id, p, dst, src, n, kind)                           \
	((void)sizeof(id),                                                   \
	 persist_copy_nt((p), (dst), (src), (n), PMTX_TSK_##kind))
#endif
/* kind: the trace's store kind of the bytes copied (persist.h). */
#define MUT_COPY_NT(id, p, dst, src, n)                                      \
	MUT_COPY_NT_KIND(id, p, dst, src, n, DATA)
/* A barrier that makes durable, and one that only orders (persist.h). */
#define MUT_BARRIER(id, p) MUT_BARRIER_KIND(id, p, PMTX_TBK_DURABLE)
#define MUT_ORDER(id, p) MUT_BARRIER_KIND(id, p, PMTX_TBK_ORDER)
/* Store sites: if (!MUT_SKIP(id)) store; */
#define MUT_SKIP(id) MUT_ON(id)

/* ---- for tests and the crash explorer ---- */

/* Number of sites; ids are 1..count (0 is none). */
unsigned pmtx__mutant_count(void);
/* "none" for 0, NULL past the last site. */
const char *pmtx__mutant_name(unsigned id);
const char *pmtx__mutant_desc(unsigned id);
/* Disable site id (0: none), with no transaction running. Returns 0,
 * PMTX_E_INVAL for an unknown id, or PMTX_E_UNSUPPORTED in a build without
 * PMTX_MUTATION (whatever the id, so it also tells the builds apart). */
int pmtx__mutant_set(unsigned id);
/* The disabled site (0: none). */
unsigned pmtx__mutant_active(void);
/* A site by name ("undo.rec_flush"), symbolic id ("MUT_UNDO_REC_FLUSH")
 * or number; 0 for "none", "0" or ""; MUT_INVALID if there is no such
 * site. */
unsigned pmtx__mutant_lookup(const char *name_or_number);
/* Read PMTX_MUTANT, once per process; an unknown site is fatal (a typo
 * must not run the unmutated code as if it were the mutant). In a build
 * without PMTX_MUTATION, a set variable draws a one-time warning. */
void pmtx__mutant_init(void);

#endif
