#include "core/fault_injection.hpp"

namespace distzo::fault {

namespace {
Injection armed;  // set before any rank works (app) or around a test; never concurrently
}  // namespace

const Injection& injected() { return armed; }

void inject(const Injection& faults) { armed = faults; }

}  // namespace distzo::fault
