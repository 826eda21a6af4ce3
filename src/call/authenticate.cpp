// Who is calling: see authenticate.hpp.
#include "call/authenticate.hpp"

#include "auth/secrets.hpp"
#include "common/settings.hpp"
#include "common/client_address.hpp"

#include <chrono>
#include <cstring>

int64_t unix_now_us()
{
    using namespace std::chrono;
    return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

void Authenticator::configure(const CatalogCache &cache)
{
    uint64_t generation = cache.generation() * 1000003 + settings::generation;
    if (generation == generation_)
        return;
    generation_ = generation;
    jwt::Config config;
    std::string file_error;
    config.hs256_secrets =
        hs256_keys_.get(settings::jwt_secret_file, settings::generation, file_error);
    // The reason names the file and what is wrong with it, never what it holds.
    if (!file_error.empty())
        ereport(WARNING,
                (errcode(ERRCODE_CONFIG_FILE_ERROR),
                 errmsg("querygate: HS256 bearer tokens are refused: %s", file_error.c_str())));
    config.jwks_json = cache.jwks();
    config.issuer = settings::jwt_issuer ? settings::jwt_issuer : "";
    config.audience = settings::jwt_audience ? settings::jwt_audience : "";
    std::string error;
    if (verifier_.configure(config, error))
        return;
    // A bad secret (too short) turns off HS256 only; a bad JWKS turns off RS256/ES256 only. Keys
    // are served either way, and what is refused is said in the log.
    ereport(WARNING, (errmsg("querygate: some bearer tokens are refused: %s", error.c_str())));
    jwt::Config without_secret = config;
    secrets::wipe(without_secret.hs256_secrets);
    jwt::Config without_jwks = config;
    without_jwks.jwks_json.clear();
    std::string ignored;
    if (!verifier_.configure(without_secret, ignored) &&
        !verifier_.configure(without_jwks, ignored))
        verifier_.configure(jwt::Config(), ignored);
}

ApiError Authenticator::authenticate(CatalogCache &cache, const CallRequest &request,
                                     const char *key_hash_hex, Caller &caller)
{
    std::string policy_name;
    auto refused_key = [&caller](std::string why) {
        caller.refusal = std::move(why);
        return api_errors::unauthorized();
    };
    // The log may say more than the answer (which policy).
    auto refused_token = [&caller](const std::string &why, std::string log_why = std::string()) {
        caller.refusal = log_why.empty() ? why : std::move(log_why);
        return api_errors::make(why == jwt::expired_reason ? error_code::token_expired
                                                           : error_code::invalid_token,
                                why);
    };
    if (!request.secret.empty()) {
        const CachedKey *key = cache.find_key(key_hash_hex);
        if (key == nullptr)
            return refused_key("no key has this secret (or it was revoked)");
        if (key->expires_at_unix_us != 0 && key->expires_at_unix_us <= unix_now_us())
            return refused_key("key \"" + key->name + "\" has expired");
        // Outside the key's addresses, or an unknown address: the same answer as a bad key.
        if (!key->any_address &&
            (request.client_ip.empty() ||
             !client_address::contains_any(key->allowed_ips, request.client_ip)))
            return refused_key("key \"" + key->name + "\" is not allowed from this address");
        policy_name = key->policy;
        caller.key = key;
        caller.key_name = key->name;
        caller.has_tenant = key->has_tenant;
        caller.tenant = key->tenant;
    } else if (!request.bearer_token.empty()) {
        configure(cache);
        std::string reason;
        if (!verifier_.verify(request.bearer_token, unix_now_us() / 1000000, caller.claims, reason))
            return refused_token(reason);
        auto policy = caller.claims.scalars.find(settings::jwt_policy_claim);
        if (policy == caller.claims.scalars.end())
            return refused_token(std::string("the token has no \"") + settings::jwt_policy_claim +
                                 "\" claim naming its policy");
        policy_name = policy->second;
        caller.is_jwt = true;
        caller.key_name = "jwt";
        auto tenant = caller.claims.scalars.find(settings::jwt_tenant_claim);
        caller.has_tenant = tenant != caller.claims.scalars.end();
        caller.tenant = caller.has_tenant ? tenant->second : "";
    } else {
        return refused_key("no key or token was sent");
    }
    // A token's policy that does not exist and one that does not accept its issuer are one
    // answer: which policies exist is not the caller's to learn.
    static constexpr const char no_policy[] = "no policy accepts this token";
    caller.policy = cache.find_policy(policy_name);
    if (caller.policy == nullptr && caller.is_jwt)
        return refused_token(no_policy, "the token's policy \"" + policy_name.substr(0, 64) +
                                            "\" does not exist");
    if (caller.policy == nullptr)
        return refused_key("the key's policy no longer exists");
    // A token reaches only a policy that accepts its issuer by name: one leaked signing key is
    // then not every policy.
    if (caller.is_jwt) {
        auto iss = caller.claims.scalars.find("iss");
        if (iss == caller.claims.scalars.end() ||
            caller.policy->jwt_issuers.count(iss->second) == 0) {
            caller.policy = nullptr;
            return refused_token(no_policy, "policy \"" + policy_name +
                                                "\" does not accept the token's issuer");
        }
    }
    return ApiError();
}

namespace {

void digest16(const std::string &text, unsigned char (&out)[16])
{
    unsigned char full[secrets::sha256_length];
    secrets::sha256(text.data(), text.size(), full);
    std::memcpy(out, full, sizeof(out));
}

// Each part with its length first, so that no two identities' parts run together.
void add_part(std::string &s, std::string_view part)
{
    s += std::to_string(part.size());
    s += ':';
    s.append(part);
}

} // namespace

run_events::Who who_of(const Caller &caller)
{
    run_events::Who who;
    if (caller.policy == nullptr)
        return who;
    std::string scope;
    add_part(scope, caller.policy->name);
    add_part(scope, caller.has_tenant ? "t" + caller.tenant : std::string("-"));
    std::string identity = scope;
    if (caller.key != nullptr) {
        add_part(identity, "key");
        add_part(identity, std::to_string(caller.key->id));
    } else {
        const auto subject = caller.claims.scalars.find("sub");
        add_part(identity, "jwt");
        add_part(identity, subject != caller.claims.scalars.end() ? subject->second : "");
    }
    digest16(scope, who.scope);
    digest16(identity, who.caller);
    return who;
}

PoolShare pool_share_of(const Caller &caller)
{
    PoolShare share;
    if (caller.policy == nullptr)
        return share;
    share.policy = caller.policy->name;
    if (caller.key != nullptr) {
        share.caller = "key:" + std::to_string(caller.key->id);
    } else {
        // Tokens of one subject are one caller; within its policy, as tokens of another policy
        // are another grant.
        const auto subject = caller.claims.scalars.find("sub");
        share.caller = "jwt:";
        add_part(share.caller, caller.policy->name);
        add_part(share.caller, subject != caller.claims.scalars.end() ? subject->second : "");
    }
    return share;
}
