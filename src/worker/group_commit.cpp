#include "worker/group_commit.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "port/atomics.h"
#include "replication/syncrep.h"
#include "utils/guc.h"
}

#include "pg/pg_guard.hpp"
#include "common/settings.hpp"
#include "worker/wal_flusher.hpp"

void GroupCommit::defer_this_commit()
{
    deferred_ = false;
    // Off, or alone on this worker, or the server does not wait for flushes anyway, or
    // synchronous standbys must confirm each commit (a wait this worker cannot share): commit as
    // PostgreSQL would.
    const bool sync_standbys = SyncRepStandbyNames != nullptr && SyncRepStandbyNames[0] != '\0';
    if (!settings::group_commit || connections_ < 2 ||
        synchronous_commit <= SYNCHRONOUS_COMMIT_OFF || sync_standbys)
        return;
    pg::guard([] {
        (void)set_config_option("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION,
                                GUC_ACTION_LOCAL, true, 0, false);
    });
    deferred_ = true;
    before_ = XactLastCommitEnd;
}

namespace {

// The end of the WAL inserted so far, a position XLogFlush accepts. At the start of a page the
// insert position points past the page header, which XLogFlush takes for a request beyond the WAL
// generated (it logs it and flushes less); the page boundary itself is the same point.
XLogRecPtr inserted_end()
{
    const XLogRecPtr at = GetXLogInsertRecPtr();
    if (XLogSegmentOffset(at, wal_segment_size) == SizeOfXLogLongPHD)
        return at - SizeOfXLogLongPHD;
    if (at % XLOG_BLCKSZ == SizeOfXLogShortPHD)
        return at - SizeOfXLogShortPHD;
    return at;
}

} // namespace

void GroupCommit::committing()
{
    if (!deferred_)
        return;
    // Visible to other workers before the commit can be: the commit takes locks (barriers) before
    // it becomes visible, and the explicit one says so.
    wal_flusher::set_committing(true);
    pg_memory_barrier();
}

void GroupCommit::committed()
{
    if (!deferred_)
        return;
    deferred_ = false;
    // A transaction that changed nothing writes no commit record.
    if (XactLastCommitEnd != before_) {
        wal_flusher::want(XactLastCommitEnd);
        to_request_ = true;
    }
    // After want() (a full barrier): a worker that finds the flag clear finds the end published.
    wal_flusher::set_committing(false);
}

void GroupCommit::abandoned()
{
    if (deferred_)
        wal_flusher::set_committing(false);
    deferred_ = false;
}

XLogRecPtr GroupCommit::hold_until()
{
    // Another worker's commit this answer may show but whose end is not published yet: hold to
    // everything inserted so far. The flags are read before `wanted`, so a commit whose flag is
    // already clear has its end in `wanted`.
    pg_memory_barrier();
    if (wal_flusher::anyone_committing()) {
        wal_flusher::want(inserted_end());
        to_request_ = true;
    }
    pg_read_barrier();
    // Any worker's deferred commit, not only this one's: this answer may show it.
    const XLogRecPtr wanted = wal_flusher::wanted();
    if (wanted <= flushed_)
        return InvalidXLogRecPtr;
    flushed_ = GetFlushRecPtr(nullptr);
    return wanted <= flushed_ ? InvalidXLogRecPtr : wanted;
}

void GroupCommit::end_round()
{
    if (!to_request_)
        return;
    to_request_ = false;
    if (!wal_flusher::wake()) {
        const XLogRecPtr upto = wal_flusher::wanted();
        pg::guard([upto] { XLogFlush(upto); });
    }
}

XLogRecPtr GroupCommit::flushed()
{
    flushed_ = GetFlushRecPtr(nullptr);
    return flushed_;
}
