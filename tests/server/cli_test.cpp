// Tests server/cli.cpp: option parsing, overrides, and the effective config.
#include "server/cli.hpp"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

namespace fs = std::filesystem;

fs::path source_dir() {
  const char* dir = std::getenv("WEFT_SOURCE_DIR");
  return dir ? fs::path{dir} : fs::current_path();
}

CliParse parse(std::vector<const char*> args) {
  args.insert(args.begin(), "weft");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}

TEST(Cli, Defaults) {
  auto r = parse({});
  ASSERT_TRUE(r.options);
  EXPECT_FALSE(r.options->config_file);  // the lookup order decides (load_effective_config)
  EXPECT_FALSE(r.options->test_only);
}

TEST(Cli, HelpAndVersionExitZeroWithText) {
  auto help = parse({"--help"});
  EXPECT_FALSE(help.options);
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("--listen"), std::string::npos);
  auto version = parse({"--version"});
  EXPECT_FALSE(version.options);
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.output.find("weft "), std::string::npos);
}

TEST(Cli, UnknownOptionIsAnError) {
  auto r = parse({"--frobnicate"});
  EXPECT_FALSE(r.options);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("frobnicate"), std::string::npos);
}

TEST(Cli, OverridesReplaceFileValues) {
  std::string conf = (source_dir() / "conf/weft.toml").string();
  std::string root = (source_dir() / "conf").string();
  auto r = parse({"-c", conf.c_str(), "--listen", "[::1]:8081", "--listen", "127.0.0.2:8082",
                  "--root", root.c_str(), "--processors", "3", "--log-level", "debug"});
  ASSERT_TRUE(r.options) << r.output;
  Config c = load_effective_config(*r.options);
  ASSERT_EQ(c.listen.size(), 2u);
  EXPECT_EQ(c.listen[0].to_string(), "[::1]:8081");
  EXPECT_EQ(c.listen[1].to_string(), "127.0.0.2:8082");
  EXPECT_EQ(c.root, fs::path{root});
  EXPECT_EQ(c.processors, 3u);
  EXPECT_EQ(c.log_level, "debug");
}

TEST(Cli, BadOverridesAreRejectedByName) {
  Config c;
  CliOptions o;
  o.listen = {"nonsense"};
  EXPECT_THROW(apply_overrides(c, o), ConfigError);
  o = {};
  o.processors = 5000;
  EXPECT_THROW(apply_overrides(c, o), ConfigError);
  o = {};
  o.log_level = "chatty";
  EXPECT_THROW(apply_overrides(c, o), ConfigError);
  o = {};
  o.config_file = (source_dir() / "conf/weft.toml").string();
  o.root = "/nonexistent/weft-root";
  try {
    load_effective_config(o);
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string{e.what()}.find("does not exist"), std::string::npos);
  }
}

}  // namespace
}  // namespace weft::http
