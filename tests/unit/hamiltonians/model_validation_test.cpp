// make_model() rejects every bad value with an InputError naming the option as the user
// types it (and accepts the edge values that are allowed).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "runtime/base/error.hpp"

namespace topokpm {
namespace {

using hamiltonians::ModelParams;

ModelParams ti_ok()
{
    ModelParams p;
    p.name = "ti";
    p.nx = 4;
    p.ny = 4;
    p.nz = 3;
    return p;
}

ModelParams graphene_ok()
{
    ModelParams p;
    p.name = "graphene";
    p.nx = 4;
    p.ny = 6;
    return p;
}

struct BadCase {
    std::string label;
    std::function<ModelParams()> make;
    std::vector<std::string> must_contain;  // option name, value, range hints
};

const double inf = std::numeric_limits<double>::infinity();
const double nan = std::numeric_limits<double>::quiet_NaN();

template <class F>
std::function<ModelParams()> ti_with(F f)
{
    return [f] { ModelParams p = ti_ok(); f(p); return p; };
}
template <class F>
std::function<ModelParams()> graphene_with(F f)
{
    return [f] { ModelParams p = graphene_ok(); f(p); return p; };
}

TEST(ModelValidation, EveryBadValueIsAnInputErrorNamingTheOption)
{
    const std::vector<BadCase> cases = {
        {"unknown model", ti_with([](ModelParams& p) { p.name = "haldane"; }), {"{model}", "haldane", "ti, graphene"}},
        {"Nx = 0", ti_with([](ModelParams& p) { p.nx = 0; }), {"{lattice}", "0x4x3", "Nx"}},
        {"Ny < 0", ti_with([](ModelParams& p) { p.ny = -2; }), {"{lattice}", "Ny"}},
        {"Nz = 0", ti_with([](ModelParams& p) { p.nz = 0; }), {"{lattice}", "Nz"}},
        {"graphene Nz", graphene_with([](ModelParams& p) { p.nz = 2; }), {"{lattice}", "Nz = 2"}},
        {"graphene Nx = 0", graphene_with([](ModelParams& p) { p.nx = 0; }), {"{lattice}", "Nx"}},
        {"periodic x too small", ti_with([](ModelParams& p) { p.nx = 2; }), {"{lattice}", "{boundary}", "Nx = 2", ">= 3"}},
        {"periodic z too small", ti_with([](ModelParams& p) { p.boundary = "ppp"; p.nz = 2; }), {"{boundary}", "Nz = 2"}},
        {"graphene periodic too small", graphene_with([](ModelParams& p) { p.ny = 1; }), {"{lattice}", "Ny = 1", ">= 2"}},
        {"boundary letter", ti_with([](ModelParams& p) { p.boundary = "ppx"; }), {"{boundary}", "ppx"}},
        {"boundary length ti", ti_with([](ModelParams& p) { p.boundary = "pp"; }), {"{boundary}", "3 letters"}},
        {"boundary length graphene", graphene_with([](ModelParams& p) { p.boundary = "ppo"; }), {"{boundary}", "2 letters"}},
        {"t = 0", ti_with([](ModelParams& p) { p.t = 0.0; }), {"{t}", "non-zero"}},
        {"t nan", ti_with([](ModelParams& p) { p.t = nan; }), {"{t}", "finite"}},
        {"m inf", ti_with([](ModelParams& p) { p.m = inf; }), {"{m}", "finite"}},
        {"dot potential nan", ti_with([](ModelParams& p) { p.dot_potential = nan; }), {"{dot_potential}"}},
        {"dot radius < 0", ti_with([](ModelParams& p) { p.dot_radius = -1.0; }), {"{dot_radius}", "-1", ">= 0"}},
        {"dot radius inf", graphene_with([](ModelParams& p) { p.dot_radius = inf; }), {"{dot_radius}"}},
        {"dot period < 0", ti_with([](ModelParams& p) { p.dot_period = -3; }), {"{dot_period}", "-3", ">= 0"}},
        {"dot period not dividing Nx", ti_with([](ModelParams& p) { p.nx = 6; p.dot_period = 4; }),
         {"{lattice}", "{dot_period}", "Nx = 6", "multiple"}},
        {"dot period not dividing Ny", ti_with([](ModelParams& p) { p.ny = 5; p.dot_period = 2; }),
         {"{lattice}", "{dot_period}", "Ny = 5"}},
        {"graphene dot period", graphene_with([](ModelParams& p) { p.dot_period = 4; }),
         {"{lattice}", "4x6", "{dot_period} 4", "Ny = 6"}},
        {"dot depth < 0", ti_with([](ModelParams& p) { p.dot_depth = -1; }), {"{dot_depth}", "-1", "0 .. Nz = 3"}},
        {"dot depth > Nz", ti_with([](ModelParams& p) { p.dot_depth = 4; }), {"{dot_depth}", "4"}},
        {"disorder < 0", ti_with([](ModelParams& p) { p.disorder = -0.5; }), {"{disorder}", "-0.5", ">= 0"}},
        {"disorder nan", graphene_with([](ModelParams& p) { p.disorder = nan; }), {"{disorder}", "finite"}},
        // Range edges (numerics/base/energy_limits.hpp kMaxEnergy, kMinEnergyScale): finite values whose
        // sums and norms would overflow later, or whose scale underflows, are refused by name.
        {"t beyond 1e100", ti_with([](ModelParams& p) { p.t = 1e308; }), {"{t}", "1e+308", "1e+100"}},
        {"t below 1e-100", graphene_with([](ModelParams& p) { p.t = -1e-101; }), {"{t}", "1e-100"}},
        {"m beyond 1e100", ti_with([](ModelParams& p) { p.m = -2e100; }), {"{m}", "1e+100"}},
        {"dot potential beyond 1e100", graphene_with([](ModelParams& p) { p.dot_potential = 1e300; }), {"{dot_potential}", "1e+100"}},
        {"disorder beyond 1e100", ti_with([](ModelParams& p) { p.disorder = 1e200; }), {"{disorder}", "1e+100"}},
        {"exchange mass nan", ti_with([](ModelParams& p) { p.exchange_mass = nan; }), {"{exchange_mass}", "finite"}},
        {"exchange mass without a z face", ti_with([](ModelParams& p) { p.boundary = "ppp"; p.exchange_mass = 0.3; }),
         {"{exchange_mass}", "0.3", "{boundary} ppp", "z open"}},
        {"exchange mass on graphene", graphene_with([](ModelParams& p) { p.exchange_mass = 0.3; }),
         {"{exchange_mass}", "graphene", "model ti"}},
        {"rows overflow", ti_with([](ModelParams& p) { p.nx = p.ny = p.nz = 2'000'000'000; }), {"{lattice}", "64-bit"}},
    };
    for (const BadCase& c : cases) {
        SCOPED_TRACE(c.label);
        try {
            hamiltonians::make_model(c.make());
            ADD_FAILURE() << "no InputError for " << c.label;
        } catch (const InputError& e) {
            const std::string what = e.what();
            for (const std::string& s : c.must_contain) EXPECT_NE(what.find(s), std::string::npos) << "'" << s << "' not in: " << what;
        }
    }
}

TEST(ModelValidation, EdgeValuesAreAccepted)
{
    const std::vector<std::function<ModelParams()>> good = {
        ti_with([](ModelParams& p) { p.nx = 3; p.ny = 3; p.nz = 1; }),
        ti_with([](ModelParams& p) { p.boundary = "ooo"; p.nx = 1; p.ny = 2; p.nz = 1; }),
        ti_with([](ModelParams& p) { p.dot_depth = 0; p.dot_period = 4; }),
        ti_with([](ModelParams& p) { p.dot_depth = 3; p.dot_period = 1; p.dot_radius = 0.0; }),
        ti_with([](ModelParams& p) { p.t = -2.0; p.m = 0.0; p.dot_potential = -5.0; }),
        ti_with([](ModelParams& p) { p.t = 1e100; p.m = -1e100; p.dot_potential = 1e100; p.disorder = 1e100; }),
        graphene_with([](ModelParams& p) { p.t = -1e-100; }),
        graphene_with([](ModelParams& p) { p.nx = 2; p.ny = 2; }),
        graphene_with([](ModelParams& p) { p.boundary = "oo"; p.nx = 1; p.ny = 1; }),
        graphene_with([](ModelParams& p) { p.dot_period = 2; p.dot_depth = -7; p.m = nan; }),  // ti-only fields ignored
    };
    for (const auto& make : good) EXPECT_NO_THROW(hamiltonians::make_model(make()));
}

// Issue 31: the app asks a model's kind instead of its name. Every kind is found by its name,
// says whether it reads --model-file as make_model() does, and a built model reports its kind.
TEST(ModelKinds, EveryKindIsFoundAndBuiltModelsReportTheirs)
{
    for (const hamiltonians::ModelKind& k : hamiltonians::model_kinds()) {
        ASSERT_EQ(hamiltonians::find_model_kind(k.name), &k) << k.name;
        EXPECT_EQ(hamiltonians::reads_model_file(k.name), k.reads_file) << k.name;
        EXPECT_LE(k.min_extents, k.max_extents) << k.name;
        EXPECT_EQ(k.max_extents == 0, k.lattice_form.empty()) << k.name;
    }
    EXPECT_EQ(hamiltonians::find_model_kind("tii"), nullptr);
    for (const ModelParams& p : {ti_ok(), graphene_ok()}) {
        const auto model = hamiltonians::make_model(p);
        EXPECT_EQ(model->kind().name, p.name);
        // A site has as many coordinates as --lattice takes extents (ti x, y, z; graphene m, n).
        EXPECT_EQ(model->kind().site_coordinates, model->kind().max_extents) << p.name;
    }
}

}  // namespace
}  // namespace topokpm
