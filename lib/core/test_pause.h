#pragma once
// A named point where a command waits when MEDSEG_TEST_PAUSE_AT names it: the tests that interrupt
// a command (SIGTERM during an install) need it stopped at a known step, not at a race's mercy.
// Unset (always, outside the tests), a pause point costs one getenv.
namespace medseg {

// When MEDSEG_TEST_PAUSE_AT equals `point`: prints "medseg: paused at <point>" on stderr and sleeps
// for up to a minute (the test sends its signal meanwhile), then goes on.
void test_pause_point(const char* point);

}  // namespace medseg
