#include "group_commit.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "replication/syncrep.h"
#include "utils/guc.h"
}

#include "pg_guard.hpp"
#include "settings.hpp"
#include "wal_flusher.hpp"

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

void GroupCommit::committed()
{
    if (!deferred_)
        return;
    deferred_ = false;
    // A transaction that changed nothing writes no commit record.
    if (XactLastCommitEnd == before_)
        return;
    wal_flusher::want(XactLastCommitEnd);
    to_request_ = true;
}

XLogRecPtr GroupCommit::hold_until()
{
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
