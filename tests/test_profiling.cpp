// --profile-steps A:B (train/loop/profiling.h): parsing and its errors, window membership, and the
// open/close sequence a trainer drives with before_step / after_step (the profiler itself is only
// called on a machine with a CUDA device; the window's state is checked everywhere).
#include <string>

#include "doctest/doctest.h"
#include "tensor/error.h"
#include "train/loop/profiling.h"

using urpe::ProfileWindow;

namespace {

std::string error_of(const std::string& text) {
  try {
    ProfileWindow::parse(text);
  } catch (const urpe::Error& e) {
    return e.what();
  }
  return "";
}

// Drives steps from..to as a trainer does; returns the steps during which the window was open.
std::string run_steps(ProfileWindow& window, int64_t from, int64_t to) {
  std::string open;
  for (int64_t step = from; step <= to; ++step) {
    window.before_step(step);
    if (window.open()) open += std::to_string(step) + " ";
    window.after_step(step);
  }
  return open;
}

}  // namespace

TEST_CASE("--profile-steps parses A:B") {
  const ProfileWindow w = ProfileWindow::parse("100:120");
  CHECK(w.enabled());
  CHECK(w.first() == 100);
  CHECK(w.last() == 120);
  const ProfileWindow one = ProfileWindow::parse("7:7");
  CHECK(one.first() == 7);
  CHECK(one.last() == 7);
  const ProfileWindow off;
  CHECK_FALSE(off.enabled());
  CHECK_FALSE(off.contains(1));
}

TEST_CASE("--profile-steps: window membership is inclusive at both ends") {
  const ProfileWindow w = ProfileWindow::parse("3:5");
  CHECK_FALSE(w.contains(2));
  CHECK(w.contains(3));
  CHECK(w.contains(4));
  CHECK(w.contains(5));
  CHECK_FALSE(w.contains(6));
  CHECK_FALSE(w.contains(0));
}

TEST_CASE("--profile-steps: bad values are one error naming the option") {
  for (const char* bad : {"", "5", ":", "5:", ":5", "a:b", "1:2:3", "-1:4", "1.5:3", "3 :4", "0x2:4",
                          "99999999999999999999:1"}) {
    INFO("value '" << bad << "'");
    const std::string message = error_of(bad);
    CHECK(message.find("--profile-steps") != std::string::npos);
    CHECK(message.find("A:B") != std::string::npos);
  }
  const std::string zero = error_of("0:4");
  CHECK(zero.find("--profile-steps") != std::string::npos);
  CHECK(zero.find("count from 1") != std::string::npos);
  const std::string reversed = error_of("9:4");
  CHECK(reversed.find("--profile-steps") != std::string::npos);
  CHECK(reversed.find("must not come after") != std::string::npos);
  CHECK_THROWS_AS(ProfileWindow(0, 3), urpe::Error);
  CHECK_THROWS_AS(ProfileWindow(4, 3), urpe::Error);
}

TEST_CASE("--profile-steps: the window must end within the run") {
  const ProfileWindow w = ProfileWindow::parse("10:20");
  CHECK_NOTHROW(w.check_within(20));
  CHECK_NOTHROW(w.check_within(500));
  try {
    w.check_within(15);
    FAIL("expected an error");
  } catch (const urpe::Error& e) {
    const std::string message = e.what();
    CHECK(message.find("--profile-steps 10:20") != std::string::npos);
    CHECK(message.find("only 15 steps") != std::string::npos);
  }
  CHECK_NOTHROW(ProfileWindow().check_within(1));  // disabled: any run length
}

TEST_CASE("--profile-steps: open exactly around steps A..B") {
  ProfileWindow w = ProfileWindow::parse("3:5");
  CHECK(run_steps(w, 1, 8) == "3 4 5 ");
  CHECK_FALSE(w.open());

  ProfileWindow single = ProfileWindow::parse("4:4");
  CHECK(run_steps(single, 1, 6) == "4 ");

  ProfileWindow off;
  CHECK(run_steps(off, 1, 4).empty());
}

TEST_CASE("--profile-steps: a resumed run inside the window captures the rest of it") {
  ProfileWindow w = ProfileWindow::parse("3:6");
  CHECK(run_steps(w, 5, 9) == "5 6 ");
  ProfileWindow late = ProfileWindow::parse("3:6");
  CHECK(run_steps(late, 7, 9).empty());
}

TEST_CASE("--profile-steps: a run ending inside the window closes it on destruction") {
  ProfileWindow w = ProfileWindow::parse("2:10");
  CHECK(run_steps(w, 1, 4) == "2 3 4 ");
  CHECK(w.open());
  ProfileWindow moved(std::move(w));
  CHECK(moved.open());
  CHECK_FALSE(w.open());  // NOLINT(bugprone-use-after-move): a moved-from window is closed
  moved = ProfileWindow();
  CHECK_FALSE(moved.open());
}
