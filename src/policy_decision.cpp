// Placeholder until the analysis lands: see policy_decision.hpp.
#include "policy_decision.hpp"

PolicyDecision decide(const QueryAnalysis &analysis, const PolicyRules &)
{
    PolicyDecision d;
    d.column_actions.assign(analysis.noutputs, masking::Action::none);
    return d;
}
