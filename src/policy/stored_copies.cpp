// The same rows under another name: see stored_copies.hpp.
#include "policy/stored_copies.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_inherits.h"
#include "rewrite/prs2lock.h"
#include "rewrite/rewriteHandler.h"
#include "storage/proc.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
}

namespace {

// From pg_inherits, nearest first.
List *read_ancestors(Oid relid)
{
    List *ancestors = NIL;
    List *pending = list_make1_oid(relid);
    Relation inherits = table_open(InheritsRelationId, AccessShareLock);
    while (pending != NIL) {
        const Oid child = linitial_oid(pending);
        pending = list_delete_first(pending);
        ScanKeyData key;
        ScanKeyInit(&key, Anum_pg_inherits_inhrelid, BTEqualStrategyNumber, F_OIDEQ,
                    ObjectIdGetDatum(child));
        SysScanDesc scan =
            systable_beginscan(inherits, InheritsRelidSeqnoIndexId, true, nullptr, 1, &key);
        HeapTuple tuple;
        while (HeapTupleIsValid(tuple = systable_getnext(scan))) {
            const Oid parent = reinterpret_cast<Form_pg_inherits>(GETSTRUCT(tuple))->inhparent;
            // Multiple inheritance can reach one ancestor twice; a cycle cannot be made.
            if (parent != relid && !list_member_oid(ancestors, parent)) {
                ancestors = lappend_oid(ancestors, parent);
                pending = lappend_oid(pending, parent);
            }
        }
        systable_endscan(scan);
    }
    table_close(inherits, AccessShareLock);
    return ancestors;
}

// The ancestors read in this command of this transaction, by relation: kept in the transaction's
// memory, so they go with it, and looked up only while its local id and command id are the ones
// they were read under (a later command may have attached a partition).
struct AncestorsOf {
    Oid relid;
    List *ancestors;
};
struct AncestorsRead {
    LocalTransactionId lxid = InvalidLocalTransactionId;
    CommandId command = InvalidCommandId;
    List *read = NIL; // of AncestorsOf
};
AncestorsRead ancestors_read;

} // namespace

const List *relation_ancestors(Oid relid)
{
    const CommandId command = GetCurrentCommandId(false);
    if (ancestors_read.lxid != MyProc->lxid || ancestors_read.command != command) {
        // A later command of the same transaction: what the earlier one read is freed, so that a
        // long transaction does not keep every command's.
        if (ancestors_read.lxid == MyProc->lxid) {
            ListCell *lc;
            foreach (lc, ancestors_read.read) {
                AncestorsOf *of = static_cast<AncestorsOf *>(lfirst(lc));
                list_free(of->ancestors);
                pfree(of);
            }
            list_free(ancestors_read.read);
        }
        ancestors_read = AncestorsRead();
        ancestors_read.lxid = MyProc->lxid;
        ancestors_read.command = command;
    }
    ListCell *lc;
    foreach (lc, ancestors_read.read) {
        const AncestorsOf *of = static_cast<const AncestorsOf *>(lfirst(lc));
        if (of->relid == relid)
            return of->ancestors;
    }
    List *ancestors = read_ancestors(relid);
    MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
    AncestorsOf *of = static_cast<AncestorsOf *>(palloc(sizeof(AncestorsOf)));
    of->relid = relid;
    of->ancestors = list_copy(ancestors);
    ancestors_read.read = lappend(ancestors_read.read, of);
    MemoryContextSwitchTo(old);
    return of->ancestors;
}

Query *matview_query(Oid relid)
{
    Query *query = nullptr;
    Relation rel = relation_open(relid, AccessShareLock);
    // Its query is kept as an ON SELECT rule (_RETURN), as a view's is; REFRESH runs it.
    for (int i = 0; rel->rd_rules != nullptr && i < rel->rd_rules->numLocks; i++) {
        RewriteRule *rule = rel->rd_rules->rules[i];
        if (rule->event == CMD_SELECT && list_length(rule->actions) == 1) {
            query = static_cast<Query *>(copyObjectImpl(linitial(rule->actions)));
            break;
        }
    }
    relation_close(rel, AccessShareLock);
    if (query == nullptr || !IsA(query, Query))
        return nullptr;
    AcquireRewriteLocks(query, true, false);
    List *rewritten = QueryRewrite(query);
    if (list_length(rewritten) != 1)
        return nullptr;
    return linitial_node(Query, rewritten);
}
