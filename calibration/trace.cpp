#include "calibration/trace.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sqlite3.h>
#include <sstream>
#include <zlib.h>

#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::calibration {

using nlohmann::json;
using sim::InputError;

std::string to_string(EventKind k) {
  switch (k) {
    case EventKind::CpuOp:
      return "cpu_op";
    case EventKind::Runtime:
      return "runtime";
    case EventKind::Kernel:
      return "kernel";
    case EventKind::Memcpy:
      return "memcpy";
    case EventKind::Memset:
      return "memset";
    case EventKind::Sync:
      return "sync";
    case EventKind::Annotation:
      return "annotation";
    case EventKind::GpuAnnotation:
      return "gpu_annotation";
    case EventKind::Other:
      return "other";
  }
  return "other";
}

std::string read_maybe_gzip(const std::string& path, std::size_t max_bytes) {
  std::string raw = sim::read_text_file(path);  // InputError for a directory or a missing file
  if (raw.size() < 2 || static_cast<unsigned char>(raw[0]) != 0x1f ||
      static_cast<unsigned char>(raw[1]) != 0x8b)
    return raw;
  z_stream zs{};
  // 16 + MAX_WBITS: accept the gzip wrapper.
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
    throw InputError(path, "", "gzip data, zlib failed to start");
  zs.next_in = reinterpret_cast<Bytef*>(raw.data());
  zs.avail_in = static_cast<uInt>(raw.size());
  std::string out;
  std::vector<char> buf(1 << 20);
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf.data());
    zs.avail_out = static_cast<uInt>(buf.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      throw InputError(path, "", "valid gzip data, got a corrupt or truncated stream");
    }
    out.append(buf.data(), buf.size() - zs.avail_out);
    // A gzip bomb (a few kB inflating to gigabytes) stops here, before memory runs out.
    if (out.size() >
        std::min(max_bytes, std::max<std::size_t>(std::size_t{64} << 20, 100 * raw.size()))) {
      inflateEnd(&zs);
      throw InputError(path, "",
                       "gzip data that inflates to at most " + std::to_string(max_bytes >> 20) +
                           " MiB and 100 times its size beyond 64 MiB, got more (compressed " +
                           std::to_string(raw.size()) + " bytes)");
    }
    if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
      inflateEnd(&zs);
      throw InputError(path, "", "a complete gzip stream, got a truncated one");
    }
  }
  inflateEnd(&zs);
  return out;
}

namespace {

// Device indices, ranks: far above any real machine, far below what would be allocated per index.
constexpr std::int64_t kMaxDevices = 4096;
constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50;
constexpr double kMaxDim = 1099511627776.0;  // 2^40

// Kineto writes ts/dur in microseconds, as integers in older releases and with three decimals
// (nanoseconds) since 2023.
// Microseconds since the epoch are ~1.7e15. A value beyond 4e15 "us" (year 2128) can only be
// nanoseconds (torch traces with ns timestamps since the epoch, ~1.7e18): it is returned unscaled
// and `*raw_ns` set. nullopt: not a number, not finite, or beyond +-4.6e18 ns, so that ts + dur
// and differences of times stay inside int64 nanoseconds (issue 18).
constexpr double kMaxAbsUs = 4e15;
constexpr double kMaxAbsNs = 4.6e18;
// Durations up to 1e12 "us": 11.6 days, or 1000 s in a trace whose unit is really nanoseconds.
constexpr std::int64_t kMaxDurNs = 1'000'000'000'000'000;

std::optional<std::int64_t> us_to_ns(const json& v, bool* raw_ns = nullptr) {
  double d = 0;
  if (v.is_number_unsigned()) {
    d = static_cast<double>(v.get<std::uint64_t>());
  } else if (v.is_number_integer()) {
    d = static_cast<double>(v.get<std::int64_t>());
  } else if (v.is_number_float()) {
    d = v.get<double>();
  } else if (v.is_string()) {
    try {
      d = std::stod(v.get<std::string>());
    } catch (const std::exception&) {
      return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  if (!std::isfinite(d) || std::abs(d) > kMaxAbsNs) return std::nullopt;
  const bool exact = v.is_number_integer();  // signed or unsigned, within +-4.6e18 here
  if (std::abs(d) > kMaxAbsUs) {
    if (raw_ns) *raw_ns = true;
    return exact ? v.get<std::int64_t>() : std::llround(d);
  }
  return exact ? v.get<std::int64_t>() * 1000 : std::llround(d * 1000.0);
}

std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
  if (v.is_number_float()) {
    std::ostringstream s;
    s << v.get<double>();
    return s.str();
  }
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_array()) return "[list]";
  if (v.is_object()) return "{object}";
  return v.dump();
}

std::int64_t int_arg(const json& args, const char* key, std::int64_t dflt) {
  auto it = args.find(key);
  if (it == args.end()) return dflt;
  if (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    return dflt;
  if (it->is_number_integer() || it->is_number_unsigned()) return it->get<std::int64_t>();
  if (it->is_number_float()) {
    const double d = it->get<double>();
    return std::abs(d) < 9e18 ? static_cast<std::int64_t>(d) : dflt;
  }
  if (it->is_string()) {
    try {
      return std::stoll(it->get<std::string>(), nullptr, 0);
    } catch (const std::exception&) {
      return dflt;
    }
  }
  return dflt;
}

EventKind kind_of_category(const std::string& cat, bool& pre2022) {
  // Current names first, then the pre-2022 ones (PyTorch 1.8-1.10 Kineto).
  if (cat == "cpu_op" || cat == "user_annotation")
    return cat == "cpu_op" ? EventKind::CpuOp : EventKind::Annotation;
  if (cat == "cuda_runtime" || cat == "cuda_driver") return EventKind::Runtime;
  if (cat == "kernel") return EventKind::Kernel;
  if (cat == "gpu_memcpy") return EventKind::Memcpy;
  if (cat == "gpu_memset") return EventKind::Memset;
  if (cat == "cuda_sync") return EventKind::Sync;
  if (cat == "gpu_user_annotation") return EventKind::GpuAnnotation;
  if (cat == "Operator") {
    pre2022 = true;
    return EventKind::CpuOp;
  }
  if (cat == "Runtime") {
    pre2022 = true;
    return EventKind::Runtime;
  }
  if (cat == "Kernel") {
    pre2022 = true;
    return EventKind::Kernel;
  }
  if (cat == "Memcpy") {
    pre2022 = true;
    return EventKind::Memcpy;
  }
  if (cat == "Memset") {
    pre2022 = true;
    return EventKind::Memset;
  }
  if (cat == "user_annotation" || cat == "User Annotation") return EventKind::Annotation;
  if (cat == "gpu_user_annotation" || cat == "GPU User Annotation") return EventKind::GpuAnnotation;
  return EventKind::Other;
}

std::string id_text(const json& v) {
  return v.is_null() ? std::string() : scalar_text(v);
}

void sort_events(std::vector<TraceEvent>& ev) {
  std::stable_sort(ev.begin(), ev.end(), [](const TraceEvent& a, const TraceEvent& b) {
    if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
    return a.dur_ns > b.dur_ns;  // enclosing event before the events it contains
  });
}

}  // namespace

namespace {
Profile kineto_from_json(const json& doc, const std::string& origin);
}  // namespace

namespace {

// What lenient_kineto_json changed.
struct JsonRepairs {
  int non_numbers = 0;    // bare inf, nan, N/A, ... read as null
  int control_bytes = 0;  // raw bytes below 0x20 inside strings, escaped
  int bad_utf8 = 0;       // bytes of no valid UTF-8 sequence inside strings, read as U+FFFD

  bool any() const { return non_numbers + control_bytes + bad_utf8 > 0; }
  std::string note() const {
    return "not strict JSON, read leniently (what torch 1.8-1.9's Kineto wrote): " +
           std::to_string(non_numbers) + " bare inf/nan/N/A values read as null, " +
           std::to_string(control_bytes) + " raw control bytes in strings escaped, " +
           std::to_string(bad_utf8) + " bytes of invalid UTF-8 in strings read as U+FFFD";
  }
};

// Length of the valid UTF-8 sequence (RFC 3629, as nlohmann's lexer checks it) at t[i], 0 if none.
std::size_t utf8_sequence(const std::string& t, std::size_t i) {
  const auto u = [&](std::size_t k) { return k < t.size() ? static_cast<unsigned char>(t[k]) : 0; };
  const auto in = [](unsigned c, unsigned lo, unsigned hi) { return c >= lo && c <= hi; };
  const unsigned c = u(i);
  if (c < 0x80) return 1;
  if (in(c, 0xC2, 0xDF)) return in(u(i + 1), 0x80, 0xBF) ? 2 : 0;
  if (in(c, 0xE0, 0xEF)) {
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return in(u(i + 1), lo, hi) && in(u(i + 2), 0x80, 0xBF) ? 3 : 0;
  }
  if (in(c, 0xF0, 0xF4)) {
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return in(u(i + 1), lo, hi) && in(u(i + 2), 0x80, 0xBF) && in(u(i + 3), 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

// The length of a bare non-number token (inf, -inf, nan, N/A, Infinity, NaN) at t[i] that ends
// where a JSON value ends, else 0.
std::size_t non_number_token(const std::string& t, std::size_t i) {
  static constexpr std::string_view kTokens[] = {"-Infinity", "Infinity", "-inf", "inf",
                                                 "-nan",      "nan",      "NaN",  "N/A"};
  for (const std::string_view tok : kTokens) {
    if (t.compare(i, tok.size(), tok) != 0) continue;
    const std::size_t j = i + tok.size();
    if (j == t.size() || std::isspace(static_cast<unsigned char>(t[j])) || t[j] == ',' ||
        t[j] == ']' || t[j] == '}')
      return tok.size();
  }
  return 0;
}

// Torch 1.8-1.9's Kineto wrote JSON by hand, and some of it is not JSON: a memcpy of 0 us has
// `"memory bandwidth (GB/s)": inf` (pytorch/kineto#105), unknown values were a bare N/A
// (kineto#129), and names were copied unescaped, so raw control bytes and cut UTF-8 sequences
// occur in strings (kineto's own TensorBoard plugin reads with json.loads(strict=False) and
// quotes N/A). This rewrites exactly those: the tokens as null, control bytes as \u00XX, invalid
// UTF-8 as U+FFFD. Everything else is copied; a file broken otherwise stays broken.
std::string lenient_kineto_json(const std::string& t, JsonRepairs& r) {
  std::string out;
  out.reserve(t.size() + 64);
  bool in_string = false;
  for (std::size_t i = 0; i < t.size();) {
    const auto c = static_cast<unsigned char>(t[i]);
    if (!in_string) {
      if (const std::size_t n = non_number_token(t, i); n > 0) {
        out += "null";
        ++r.non_numbers;
        i += n;
        continue;
      }
      in_string = c == '"';
      out += t[i++];
    } else if (c == '\\' && i + 1 < t.size()) {
      out.append(t, i, 2);
      i += 2;
    } else if (c < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++r.control_bytes;
      ++i;
    } else if (const std::size_t n = utf8_sequence(t, i); n == 0) {
      out += "\xEF\xBF\xBD";
      ++r.bad_utf8;
      ++i;
    } else {
      in_string = c != '"';
      out.append(t, i, n);
      i += n;
    }
  }
  return out;
}

// The parse error of `text` as a one-line InputError: a file that ends inside its JSON is said to
// be truncated (a copy cut short, a trace still being written, a process that died writing it).
InputError parse_failure(const json::parse_error& e, const std::string& text,
                         const std::string& origin) {
  if (e.byte > text.size())
    return InputError(origin, "byte " + std::to_string(e.byte),
                      "Chrome-trace JSON (an object with traceEvents, or a list of events), got "
                      "the end of the file inside it: a truncated file (cut short, or still being "
                      "written)");
  return InputError(
      origin, "byte " + std::to_string(e.byte),
      "Chrome-trace JSON (an object with traceEvents, or a list of events), got a parse error");
}

// The JSON document of a trace; non-strict JSON of old Kineto releases is read leniently and
// what was changed counted in `repairs`.
json parse_trace_document(const std::string& text, const std::string& origin,
                          JsonRepairs& repairs) {
  try {
    try {
      return json::parse(text);
    } catch (const json::parse_error& e) {
      const std::string lenient = lenient_kineto_json(text, repairs);
      if (!repairs.any()) throw parse_failure(e, text, origin);
      try {
        return json::parse(lenient);
      } catch (const json::parse_error&) {
        throw parse_failure(e, text, origin);  // broken beyond what old Kineto wrote
      }
    }
  } catch (const json::exception& e) {
    // out_of_range.406: a number such as 1e309 that no double holds.
    throw InputError(
        origin, "", std::string("Chrome-trace JSON with numbers a double holds, got: ") + e.what());
  }
}

}  // namespace

Profile parse_kineto_json(const std::string& text, const std::string& origin) {
  sim::check_json_nesting(text, origin);
  JsonRepairs repairs;
  const json doc = parse_trace_document(text, origin, repairs);
  try {
    Profile p = kineto_from_json(doc, origin);
    if (repairs.any()) p.missing.insert(p.missing.begin(), repairs.note());
    return p;
  } catch (const json::exception& e) {
    // A value of another JSON type than the trace format has there (type_error.302, ...).
    throw InputError(origin, "traceEvents",
                     std::string("Chrome-trace events of the usual JSON types, got: ") + e.what());
  }
}

namespace {

// The event list: the document itself (torch's bare list) or its traceEvents.
const json& trace_events(const json& doc, const std::string& origin, bool& bare) {
  if (doc.is_array()) {
    bare = true;
    return doc;
  }
  if (doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array())
    return doc.at("traceEvents");
  throw InputError(origin, "traceEvents",
                   "a list of trace events (Kineto/PyTorch profiler output), got none");
}

// ROCm's hipGetDeviceProperties name when it has no marketing name for the part: the MI250 of
// tests/data/calibration/mi250_rocm_minitoy.json (gfx9.0, 104 CUs, 64 GiB) and Radeon iGPUs alike
// print it, so it names no model. Read as no name (calibrate then asks for --device-model), with
// what the header does say in Profile::missing.
void drop_generic_gpu_name(const json& props, Profile& p) {
  if (p.device_name != "AMD Radeon Graphics") return;
  auto num = [&](const char* k) {
    return props.contains(k) ? scalar_text(props.at(k)) : std::string("?");
  };
  const double gib = static_cast<double>(int_arg(props, "totalGlobalMem", 0)) / (1 << 30);
  std::ostringstream m;
  m << "deviceProperties name \"AMD Radeon Graphics\" is ROCm's generic name, not a GPU model "
       "(the header says compute "
    << num("computeMajor") << "." << num("computeMinor") << ", " << num("numSms") << " CUs, "
    << static_cast<int>(gib + 0.5) << " GiB): read as no GPU name; pass --device-model";
  p.missing.push_back(m.str());
  p.device_name.clear();
}

// The GPU's name and the rank (distributedInfo) of a Kineto document. torch >= 1.10 writes the
// GPUs as `deviceProperties`; torch 1.8-1.9 wrote the same list as `computeProperties`
// (tests/data/calibration/v100_torch181_tbplugin_excerpt.json).
void read_trace_header(const json& doc, const std::string& origin, Profile& p) {
  if (!doc.is_object()) return;
  for (const char* key : {"deviceProperties", "computeProperties"})
    if (auto it = doc.find(key); p.device_name.empty() && it != doc.end() && it->is_array() &&
                                 !it->empty() && (*it)[0].is_object() &&
                                 (*it)[0].contains("name")) {
      p.device_name = scalar_text((*it)[0].at("name"));
      drop_generic_gpu_name((*it)[0], p);
    }
  if (auto it = doc.find("distributedInfo"); it != doc.end() && it->is_object()) {
    const std::int64_t rank = int_arg(*it, "rank", -1), world = int_arg(*it, "world_size", 0);
    if (rank < -1 || rank >= kMaxDevices || world < 0 || world > kMaxDevices)
      throw InputError(origin, "distributedInfo",
                       "a rank and world_size from 0 to " + std::to_string(kMaxDevices) + ", got " +
                           std::to_string(rank) + " and " + std::to_string(world));
    p.rank = static_cast<int>(rank);
    p.world_size = static_cast<int>(world);
  }
}

// ac2g flows: (pid/tid, ts) of the launch ("s") and of the GPU activity ("f") -> flow id, which
// is the correlation id; used where an event lacks `correlation` in its args.
struct Flows {
  std::map<std::pair<std::string, std::int64_t>, std::int64_t> start, end;
};

Flows ac2g_flows(const json& events) {
  Flows flows;
  for (const json& e : events) {
    if (!e.is_object()) continue;
    const std::string ph = e.value("ph", std::string());
    if ((ph == "s" || ph == "f") && e.contains("ts") && e.contains("id") &&
        (e.value("cat", std::string()) == "ac2g" || e.value("name", std::string()) == "ac2g")) {
      const std::int64_t id = int_arg(e, "id", -1);
      const std::string th = (e.contains("pid") ? id_text(e["pid"]) : std::string()) + "/" +
                             (e.contains("tid") ? id_text(e["tid"]) : std::string());
      (ph == "s" ? flows.start : flows.end)[{th, us_to_ns(e["ts"]).value_or(0)}] = id;
    }
  }
  return flows;
}

// ts and dur of event `at`; `raw` is set when ts was already nanoseconds (see us_to_ns).
void read_event_times(const json& e, const std::string& origin, const std::string& at,
                      TraceEvent& t, bool& raw) {
  if (!e.contains("ts"))
    throw InputError(origin, at + ".ts", "a timestamp in microseconds, got none");
  const auto ts = us_to_ns(e.at("ts"), &raw);
  if (!ts)
    throw InputError(origin, at + ".ts",
                     "a timestamp in microseconds (or nanoseconds since the epoch), got " +
                         sim::printable(scalar_text(e.at("ts"))));
  t.ts_ns = *ts;
  const auto dur = e.contains("dur") ? us_to_ns(e.at("dur")) : std::optional<std::int64_t>(0);
  if (!dur || *dur < 0 || *dur > kMaxDurNs)
    throw InputError(origin, at + ".dur",
                     "a duration from 0 to 1e12 (us, or ns in a nanosecond trace), got " +
                         sim::printable(scalar_text(e.at("dur"))));
  t.dur_ns = *dur;
}

EventKind event_kind(const json& e, const TraceEvent& t, bool& any_cat, bool& pre2022) {
  EventKind kind;
  if (e.contains("cat")) {
    any_cat = true;
    kind = kind_of_category(scalar_text(e.at("cat")), pre2022);
  } else {
    // Debian's torch 1.13 CPU build: no categories; every event is a CPU operator, except the
    // step annotations it also writes as plain events.
    kind = t.name.rfind("ProfilerStep#", 0) == 0 ? EventKind::Annotation : EventKind::CpuOp;
  }
  if (kind == EventKind::CpuOp && t.name.rfind("ProfilerStep#", 0) == 0)
    kind = EventKind::Annotation;
  return kind;
}

// Device, stream and bytes of a GPU activity, sync or GPU annotation.
void read_gpu_fields(const json& e, const json& args, const std::string& origin,
                     const std::string& at, TraceEvent& t) {
  std::int64_t device = int_arg(args, "device", -1);
  if (device < -1 || device >= kMaxDevices)
    throw InputError(
        origin, at + ".args.device",
        "a GPU index below " + std::to_string(kMaxDevices) + ", got " + std::to_string(device));
  // Without args.device, Kineto's pid of a GPU event is the device (a process id is not).
  if (device < 0 && e.contains("pid") && e.at("pid").is_number()) {
    const std::int64_t pid = int_arg(e, "pid", -1);
    if (pid >= 0 && pid < kMaxDevices) device = pid;
  }
  t.device = static_cast<int>(device);
  t.stream = int_arg(args, "stream", -1);
  if (t.stream < 0 && e.contains("tid") && e.at("tid").is_number())
    t.stream = int_arg(e, "tid", -1);
  t.bytes = int_arg(args, "bytes", 0);
  if (t.bytes < 0 || t.bytes > kMaxBytes)
    throw InputError(origin, at + ".args.bytes",
                     "a size from 0 to 1 PiB, got " + std::to_string(t.bytes));
}

// Input Dims, Input type, Concrete Inputs and the scalar args of a framework op.
void read_op_args(const json& args, const std::string& origin, const std::string& at,
                  TraceEvent& t) {
  if (auto it = args.find("Input Dims"); it != args.end() && it->is_array()) {
    for (const json& d : *it) {
      std::vector<std::int64_t> dims;
      if (d.is_array())
        for (const json& x : d) {
          if (!x.is_number()) continue;
          const double v = x.get<double>();
          if (!(v >= -1 && v <= kMaxDim))
            throw InputError(origin, at + ".args.Input Dims",
                             "dimensions from -1 to 2^40, got " + sim::printable(x.dump()));
          dims.push_back(static_cast<std::int64_t>(v));
        }
      t.input_dims.push_back(std::move(dims));
    }
  }
  if (auto it = args.find("Input type"); it != args.end() && it->is_array())
    for (const json& d : *it)
      t.input_types.push_back(d.is_string() ? d.get<std::string>() : std::string());
  if (auto it = args.find("Concrete Inputs"); it != args.end() && it->is_array())
    for (const json& d : *it)
      t.concrete_inputs.push_back(d.is_string() ? d.get<std::string>() : scalar_text(d));
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (it->is_primitive() && it.key() != "Input Dims" && it.key() != "Input type")
      t.args[it.key()] = scalar_text(*it);
  }
}

// What the event loop carries from one event to the next.
struct ReadState {
  Flows flows;
  bool pre2022 = false;
  bool any_cat = false;
  std::vector<bool> raw_ts;  // per event pushed: its ts was already nanoseconds (see us_to_ns)
  bool any_raw_ts = false;
};

// One "X" event (traceEvents[index]) into p.events; flows, metadata, instants and events of
// other categories are skipped.
void read_event(const json& e, std::size_t index, const std::string& origin, ReadState& s,
                Profile& p) {
  if (!e.is_object()) return;
  const auto ph_it = e.find("ph");
  const std::string ph =
      ph_it != e.end() && ph_it->is_string() ? ph_it->get<std::string>() : std::string();
  if (ph != "X") return;  // flows, metadata and instants carry no durations
  TraceEvent t;
  const std::string at = "traceEvents[" + std::to_string(index) + "]";
  t.name = e.contains("name") ? scalar_text(e.at("name")) : std::string();
  bool raw = false;
  read_event_times(e, origin, at, t, raw);
  t.pid = e.contains("pid") ? id_text(e.at("pid")) : std::string();
  t.tid = e.contains("tid") ? id_text(e.at("tid")) : std::string();
  t.kind = event_kind(e, t, s.any_cat, s.pre2022);
  if (t.kind == EventKind::Other) return;
  const json empty = json::object();
  const json& args = e.contains("args") && e.at("args").is_object() ? e.at("args") : empty;
  t.correlation = int_arg(args, "correlation", -1);
  t.external_id = int_arg(args, "External id", -1);
  if (t.external_id < 0) t.external_id = int_arg(args, "external id", -1);  // before 2022
  if (t.correlation < 0 && (t.on_gpu() || t.kind == EventKind::Runtime)) {
    const auto& flows = t.kind == EventKind::Runtime ? s.flows.start : s.flows.end;
    if (auto f = flows.find({t.pid + "/" + t.tid, t.ts_ns}); f != flows.end()) {
      t.correlation = f->second;
      if (t.on_gpu()) ++p.links.by_flow;
    }
  }
  if (t.on_gpu() || t.kind == EventKind::Sync || t.kind == EventKind::GpuAnnotation)
    read_gpu_fields(e, args, origin, at, t);
  read_op_args(args, origin, at, t);
  s.raw_ts.push_back(raw);
  s.any_raw_ts |= raw;
  p.events.push_back(std::move(t));
}

// Kineto writes microseconds whatever `displayTimeUnit` says; a few exporters wrote
// nanoseconds. Timestamps beyond 4e15 can only be ns (us_to_ns). Otherwise: a kernel launch
// returns in 2-50 us on every GPU generation, and even where launches block on a full queue the
// fastest tenth do not, so launches whose 10th percentile reads over 0.5 ms (as microseconds)
// are nanoseconds.
void fix_nanosecond_units(const ReadState& s, Profile& p) {
  bool ns = s.any_raw_ts;
  if (!ns) {
    std::vector<std::int64_t> launch_durs;
    for (const TraceEvent& t : p.events)
      if (t.kind == EventKind::Runtime && t.name.find("Launch") != std::string::npos)
        launch_durs.push_back(t.dur_ns);
    if (!launch_durs.empty()) {
      const auto p10 = launch_durs.begin() + static_cast<std::ptrdiff_t>(launch_durs.size() / 10);
      std::nth_element(launch_durs.begin(), p10, launch_durs.end());
      ns = *p10 > 500'000;
    }
  }
  if (!ns) return;
  p.ns_timestamps = true;
  for (std::size_t i = 0; i < p.events.size(); ++i) {
    TraceEvent& t = p.events[i];
    if (!s.raw_ts[i]) t.ts_ns = (t.ts_ns + 500) / 1000;
    t.dur_ns = (t.dur_ns + 500) / 1000;
  }
  p.missing.push_back(
      "timestamps are nanoseconds (beyond 4e15, or kernel launches that would last over 0.5 ms "
      "as "
      "microseconds): read as ns");
}

// What a calibration from this trace cannot know, in p.missing.
void note_missing_kineto(Profile& p) {
  bool has_gpu = false, has_runtime = false, has_dims = false, has_step = false,
       any_gpu_time = false, has_op = false;
  for (const TraceEvent& t : p.events) {
    has_gpu |= t.on_gpu();
    has_op |= t.kind == EventKind::CpuOp;
    any_gpu_time |= t.on_gpu() && (t.ts_ns != 0 || t.dur_ns != 0);
    has_runtime |= t.kind == EventKind::Runtime;
    has_dims |= !t.input_dims.empty();
    has_step |= t.kind == EventKind::Annotation && t.name.rfind("ProfilerStep#", 0) == 0;
  }
  const auto launches = std::count_if(p.events.begin(), p.events.end(),
                                      [](const TraceEvent& t) { return enqueues_gpu_work(t); });
  if (!has_gpu && launches > 0)
    p.missing.push_back(std::to_string(launches) +
                        " runtime calls enqueue GPU work but no GPU activity was recorded: not a "
                        "CPU-only trace, its kernels are missing");
  else if (!has_gpu)
    p.missing.push_back("no GPU activity (kernels, memcpys, memsets): CPU-only trace");
  if (has_gpu && !any_gpu_time)
    p.missing.push_back(
        "every GPU activity has ts 0 and dur 0 (torch 2.11 writes this when a profiler session is "
        "exported after a later "
        "session ran): no GPU times; export each session before starting the next");
  if (has_gpu && !has_runtime)
    p.missing.push_back("no runtime launch events: kernels cannot be tied to CPU ops");
  if (has_gpu && !has_op)
    // tests/data/calibration/v100pcie_rmsnorm-triton-*_cuda-only.json: "Op count": 0.
    p.missing.push_back(
        "no framework ops (no cpu_op event: a profiler run with activities=[CUDA] only, or a "
        "fragment): GPU activities are keyed by kernel name, as in an Nsight export");
  else if (!has_dims)
    p.missing.push_back(
        "no input shapes (record_shapes=False, or torch 1.13 export): signatures carry the op name "
        "only");
  if (!has_step)
    p.missing.push_back("no ProfilerStep#N annotations: the whole trace span is one step");
}

Profile kineto_from_json(const json& doc, const std::string& origin) {
  Profile p;
  p.source = origin;
  bool bare = false;
  const json& events = trace_events(doc, origin, bare);
  read_trace_header(doc, origin, p);
  ReadState s;
  s.flows = ac2g_flows(events);
  std::size_t index = 0;
  for (const json& e : events) read_event(e, index++, origin, s, p);
  if (bare || !s.any_cat)
    p.dialect = "torch-bare-list";
  else
    p.dialect = s.pre2022 ? "kineto-pre2022" : "kineto";
  fix_nanosecond_units(s, p);
  sort_events(p.events);
  link_events(p);
  note_missing_kineto(p);
  return p;
}

}  // namespace

namespace {

struct Db {
  sqlite3* db = nullptr;
  ~Db() {
    if (db) sqlite3_close(db);
  }
};

struct Stmt {
  sqlite3_stmt* st = nullptr;
  ~Stmt() {
    if (st) sqlite3_finalize(st);
  }
};

std::set<std::string> table_columns(sqlite3* db, const std::string& table) {
  std::set<std::string> cols;
  Stmt s;
  const std::string q = "PRAGMA table_info(" + table + ")";
  if (sqlite3_prepare_v2(db, q.c_str(), -1, &s.st, nullptr) != SQLITE_OK) return cols;
  while (sqlite3_step(s.st) == SQLITE_ROW)
    if (const unsigned char* t = sqlite3_column_text(s.st, 1))
      cols.insert(reinterpret_cast<const char*>(t));
  return cols;
}

// start/end of one activity row: 0 <= start <= end, both inside +-4e18 ns, at most 1000 s apart
// (an end of INT64_MAX or an end before the start is a damaged export, not a duration).
void check_span(const std::string& path, const char* table, std::int64_t row, std::int64_t start,
                std::int64_t end) {
  constexpr std::int64_t kMaxNs = 4'000'000'000'000'000'000, kMaxDurNs = 1'000'000'000'000;
  if (start < 0 || start > kMaxNs || end < start || end - start > kMaxDurNs)
    throw InputError(path, std::string(table) + " row " + std::to_string(row),
                     "0 <= start <= end < 4e18 ns and end - start <= 1000 s, got start " +
                         std::to_string(start) + ", end " + std::to_string(end));
}

std::string col_text(sqlite3_stmt* st, int i) {
  const unsigned char* t = sqlite3_column_text(st, i);
  return t ? reinterpret_cast<const char*>(t) : std::string();
}

struct GpuTable {
  const char* table;
  EventKind kind;
  std::vector<std::string> required;
};

// The SQL expression naming a row of a GPU activity table.
std::string gpu_row_name_expr(EventKind kind, const std::set<std::string>& cols) {
  if (kind == EventKind::Kernel)
    return cols.count("demangledName") ? "(SELECT value FROM StringIds WHERE id = t.demangledName)"
           : cols.count("shortName")   ? "(SELECT value FROM StringIds WHERE id = t.shortName)"
                                       : "'kernel'";
  if (kind == EventKind::Memcpy)
    return cols.count("copyKind") ? "'Memcpy kind ' || t.copyKind" : "'Memcpy'";
  if (kind == EventKind::Memset) return "'Memset'";
  return cols.count("syncType") ? "'Sync type ' || t.syncType" : "'Sync'";
}

// The rows of one CUPTI GPU activity table (kernels, memcpys, memsets, syncs) into p.events.
void read_gpu_table(sqlite3* db, const std::string& path, const GpuTable& g, Profile& p) {
  const auto cols = table_columns(db, g.table);
  if (cols.empty()) {
    p.missing.push_back(std::string("table ") + g.table +
                        " absent (no such activity was recorded)");
    return;
  }
  for (const std::string& c : g.required)
    if (!cols.count(c))
      throw InputError(path, std::string(g.table) + "." + c,
                       "the column of Nsight Systems schema 2.x, got a table without it "
                       "(unsupported export version)");
  const std::string bytes_expr = cols.count("bytes") ? "t.bytes" : "0";
  const std::string q = "SELECT t.start, t.end, t.deviceId, t.streamId, t.correlationId, " +
                        bytes_expr + ", " + gpu_row_name_expr(g.kind, cols) + " FROM " + g.table +
                        " t ORDER BY t.start";
  Stmt s;
  if (sqlite3_prepare_v2(db, q.c_str(), -1, &s.st, nullptr) != SQLITE_OK)
    throw InputError(path, g.table,
                     std::string("a readable table, got SQLite error: ") + sqlite3_errmsg(db));
  std::int64_t row = 0;
  while (sqlite3_step(s.st) == SQLITE_ROW) {
    TraceEvent t;
    t.kind = g.kind;
    t.ts_ns = sqlite3_column_int64(s.st, 0);
    check_span(path, g.table, row, t.ts_ns, sqlite3_column_int64(s.st, 1));
    t.dur_ns = sqlite3_column_int64(s.st, 1) - t.ts_ns;
    const std::int64_t device = sqlite3_column_int64(s.st, 2);
    t.stream = sqlite3_column_int64(s.st, 3);
    t.correlation = sqlite3_column_int64(s.st, 4);
    t.bytes = sqlite3_column_int64(s.st, 5);
    if (device < 0 || device >= kMaxDevices || t.bytes < 0 || t.bytes > kMaxBytes)
      throw InputError(path, std::string(g.table) + " row " + std::to_string(row),
                       "a deviceId from 0 to " + std::to_string(kMaxDevices - 1) +
                           " and bytes from 0 to 1 PiB, got " + std::to_string(device) + " and " +
                           std::to_string(t.bytes));
    t.device = static_cast<int>(device);
    ++row;
    t.name = col_text(s.st, 6);
    t.pid = std::to_string(t.device);
    t.tid = std::to_string(t.stream);
    p.events.push_back(std::move(t));
  }
}

// The CUDA runtime calls (launches, copies, syncs) on the host threads into p.events.
void read_runtime_table(sqlite3* db, const std::string& path, Profile& p) {
  const auto rcols = table_columns(db, "CUPTI_ACTIVITY_KIND_RUNTIME");
  if (rcols.empty()) {
    p.missing.push_back(
        "table CUPTI_ACTIVITY_KIND_RUNTIME absent: GPU work cannot be tied to host launches");
    return;
  }
  for (const char* c : {"start", "end", "globalTid", "correlationId", "nameId"})
    if (!rcols.count(c))
      throw InputError(path, std::string("CUPTI_ACTIVITY_KIND_RUNTIME.") + c,
                       "the column of Nsight Systems schema 2.x, got a table without it");
  Stmt s;
  const char* q =
      "SELECT r.start, r.end, r.globalTid, r.correlationId, (SELECT value FROM StringIds WHERE "
      "id = r.nameId) "
      "FROM CUPTI_ACTIVITY_KIND_RUNTIME r ORDER BY r.start";
  if (sqlite3_prepare_v2(db, q, -1, &s.st, nullptr) != SQLITE_OK)
    throw InputError(path, "CUPTI_ACTIVITY_KIND_RUNTIME",
                     std::string("a readable table, got SQLite error: ") + sqlite3_errmsg(db));
  std::int64_t row = 0;
  while (sqlite3_step(s.st) == SQLITE_ROW) {
    TraceEvent t;
    t.kind = EventKind::Runtime;
    t.ts_ns = sqlite3_column_int64(s.st, 0);
    check_span(path, "CUPTI_ACTIVITY_KIND_RUNTIME", row++, t.ts_ns, sqlite3_column_int64(s.st, 1));
    t.dur_ns = sqlite3_column_int64(s.st, 1) - t.ts_ns;
    const std::int64_t gtid = sqlite3_column_int64(s.st, 2);
    // globalTid packs the process id in bits 24..47 and the thread id in the low 24 bits.
    t.pid = std::to_string((gtid >> 24) & 0xFFFFFF);
    t.tid = std::to_string(gtid & 0xFFFFFF);
    t.correlation = sqlite3_column_int64(s.st, 3);
    t.name = col_text(s.st, 4);
    // Strip the version suffix ("cudaLaunchKernel_v7000") so names match Kineto's.
    if (auto at = t.name.find("_v"); at != std::string::npos && at + 2 < t.name.size() &&
                                     std::isdigit(static_cast<unsigned char>(t.name[at + 2])))
      t.name.resize(at);
    p.events.push_back(std::move(t));
  }
}

}  // namespace

Profile read_nsys_sqlite(const std::string& path) {
  Db d;
  if (sqlite3_open_v2(path.c_str(), &d.db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
    throw InputError(path, "", "an Nsight Systems SQLite export, got a file SQLite cannot open");
  Profile p;
  p.source = path;
  p.dialect = "nsys-sqlite";

  const bool has_strings = !table_columns(d.db, "StringIds").empty();
  if (!has_strings)
    throw InputError(path, "StringIds",
                     "an Nsight Systems export with a StringIds table, got none");
  const std::vector<GpuTable> gpu_tables = {
      {"CUPTI_ACTIVITY_KIND_KERNEL",
       EventKind::Kernel,
       {"start", "end", "deviceId", "streamId", "correlationId"}},
      {"CUPTI_ACTIVITY_KIND_MEMCPY",
       EventKind::Memcpy,
       {"start", "end", "deviceId", "streamId", "correlationId", "bytes"}},
      {"CUPTI_ACTIVITY_KIND_MEMSET",
       EventKind::Memset,
       {"start", "end", "deviceId", "streamId", "correlationId", "bytes"}},
      {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
       EventKind::Sync,
       {"start", "end", "deviceId", "streamId", "correlationId"}},
  };
  for (const GpuTable& g : gpu_tables) read_gpu_table(d.db, path, g, p);
  read_runtime_table(d.db, path, p);
  if (!table_columns(d.db, "TARGET_INFO_GPU").empty()) {
    Stmt s;
    if (sqlite3_prepare_v2(d.db, "SELECT name FROM TARGET_INFO_GPU ORDER BY id LIMIT 1", -1, &s.st,
                           nullptr) == SQLITE_OK &&
        sqlite3_step(s.st) == SQLITE_ROW)
      p.device_name = col_text(s.st, 0);
  }
  if (table_columns(d.db, "NVTX_EVENTS").empty())
    p.missing.push_back("table NVTX_EVENTS absent: no framework ops or step ranges");
  p.missing.push_back(
      "Nsight exports carry no framework operators or input shapes: calibration keys on kernel "
      "names");
  p.missing.push_back(
      "CUDA event record/wait pairs are not exported per stream: cross-stream waits are inferred");
  sort_events(p.events);
  link_events(p);
  return p;
}

Profile read_profile(const std::string& path) {
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path, "", "a readable profile file, got none (cannot open)");
    char magic[16] = {};
    in.read(magic, sizeof magic);
    if (in.gcount() == 16 && std::string(magic, 15) == "SQLite format 3")
      return read_nsys_sqlite(path);
  }
  return parse_kineto_json(read_maybe_gzip(path), path);
}

bool Profile::has_gpu_activity() const {
  return std::any_of(events.begin(), events.end(), [](const TraceEvent& e) { return e.on_gpu(); });
}

bool enqueues_gpu_work(const TraceEvent& e) {
  if (e.kind != EventKind::Runtime) return false;
  const std::string& n = e.name;
  const bool launch =
      n.find("Launch") != std::string::npos &&
      (n.find("Kernel") != std::string::npos || n.find("Graph") != std::string::npos);
  return launch || n.find("MemcpyAsync") != std::string::npos ||
         n.find("MemsetAsync") != std::string::npos;
}

namespace {

// "cudaLaunchKernel x10, cuLaunchKernel x2, ...": the names of `events` that pass `keep`, in
// first-seen order, at most four.
template <class Keep>
std::string call_names(const std::vector<TraceEvent>& events, Keep keep, std::size_t& total) {
  std::vector<std::pair<std::string, int>> seen;
  total = 0;
  for (const TraceEvent& e : events) {
    if (!keep(e)) continue;
    ++total;
    auto it =
        std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == e.name; });
    if (it == seen.end())
      seen.emplace_back(e.name, 1);
    else
      ++it->second;
  }
  std::string out;
  for (std::size_t i = 0; i < seen.size() && i < 4; ++i)
    out += (i ? ", " : "") + seen[i].first + " x" + std::to_string(seen[i].second);
  if (seen.size() > 4) out += ", ...";
  return out;
}

}  // namespace

void require_measured_work(const Profile& p) {
  if (p.has_gpu_activity()) return;
  std::size_t launches = 0;
  const std::string launched = call_names(p.events, enqueues_gpu_work, launches);
  if (launches > 0)
    throw InputError(p.source, "traceEvents",
                     "the GPU activities (kernels, copies) of its " + std::to_string(launches) +
                         " runtime calls that enqueue GPU work (" + launched +
                         "), got none: the profiler recorded the launches but not the GPU work "
                         "(ProfilerActivity.CUDA off, or the trace stopped before the GPU ran "
                         "them: synchronize before the profiler stops), so no GPU time is known");
  const bool any_op = std::any_of(p.events.begin(), p.events.end(),
                                  [](const TraceEvent& e) { return e.kind == EventKind::CpuOp; });
  if (any_op) return;
  std::size_t calls = 0;
  const std::string names = call_names(
      p.events, [](const TraceEvent& e) { return e.kind == EventKind::Runtime; }, calls);
  throw InputError(
      p.source, "traceEvents",
      "a framework op, kernel or copy with a measured time, got none (" + std::to_string(calls) +
          " runtime calls" + (calls ? ": " + names : std::string()) +
          "): nothing ran inside the profiler's window, so there is no step to measure");
}

bool launches_nothing(const std::string& op_name) {
  static const std::set<std::string> kNames = {"empty",
                                               "empty_strided",
                                               "empty_like",
                                               "new_empty",
                                               "new_empty_strided",
                                               "resize_",
                                               "resize_as_",
                                               "set_",
                                               "as_strided",
                                               "view",
                                               "_reshape_alias",
                                               "_unsafe_view",
                                               "alias",
                                               "detach",
                                               "detach_",
                                               "lift_fresh",
                                               "record_stream",
                                               "unsqueeze",
                                               "squeeze",
                                               "expand",
                                               "t",
                                               "transpose",
                                               "permute",
                                               "slice",
                                               "select",
                                               "narrow",
                                               "view_as",
                                               "unbind",
                                               "split",
                                               "chunk",
                                               "_local_scalar_dense_stub"};
  std::string n = op_name;
  if (n.rfind("aten::", 0) == 0) n = n.substr(6);
  return kNames.contains(n);
}

namespace {

std::string kind_key(EventKind k) {
  return to_string(k);
}

}  // namespace

void link_events(Profile& p) {
  LinkReport& L = p.links;
  const int by_flow = L.by_flow;
  L = LinkReport{};
  L.by_flow = by_flow;
  auto& ev = p.events;
  // Runtime calls by correlation id (unique per process; a trace is one process).
  std::map<std::int64_t, std::int64_t> runtime_of_corr;
  std::map<std::int64_t, std::vector<std::int64_t>> ops_of_ext;
  bool any_runtime = false;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind == EventKind::Runtime) {
      any_runtime = true;
      if (ev[i].correlation >= 0)
        runtime_of_corr.emplace(ev[i].correlation, static_cast<std::int64_t>(i));
    }
    if (ev[i].kind == EventKind::CpuOp && ev[i].external_id >= 0)
      ops_of_ext[ev[i].external_id].push_back(static_cast<std::int64_t>(i));
  }
  // Runtime call -> innermost enclosing framework op on its thread (events are sorted by start,
  // enclosing first, so a stack per thread holds the ops open at each call).
  std::map<std::string, std::vector<std::int64_t>> open;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    TraceEvent& e = ev[i];
    if (e.kind != EventKind::CpuOp && e.kind != EventKind::Runtime) continue;
    auto& st = open[e.pid + "/" + e.tid];
    while (!st.empty()) {
      const TraceEvent& top = ev[static_cast<std::size_t>(st.back())];
      if (top.end_ns() > e.ts_ns || top.ts_ns == e.ts_ns) break;
      st.pop_back();
    }
    if (e.kind == EventKind::CpuOp) {
      st.push_back(static_cast<std::int64_t>(i));
      continue;
    }
    for (auto it = st.rbegin(); it != st.rend(); ++it)
      if (!launches_nothing(ev[static_cast<std::size_t>(*it)].name)) {
        e.op = *it;
        break;
      }
    // The trace's External id: trusted only where the op it names encloses the call.
    if (e.external_id >= 0 && e.external_id == e.correlation) {
      ++L.external_id_is_correlation;  // torch <= 2.0: the id is the call's own, not an op's
    } else if (e.external_id >= 0) {
      std::int64_t named = -1;
      if (auto x = ops_of_ext.find(e.external_id); x != ops_of_ext.end())
        for (std::int64_t o : x->second) {
          const TraceEvent& c = ev[static_cast<std::size_t>(o)];
          if (c.pid == e.pid && c.ts_ns <= e.ts_ns && e.ts_ns <= c.end_ns() &&
              !launches_nothing(c.name))
            named = o;
        }
      // An id naming an op that encloses the call agrees with nesting and says which of the
      // enclosing ops it was (a 0-length call at an op's end boundary; torch 1.8-1.10 writes
      // those). An id naming an op elsewhere is a coincidence (torch <= 2.0: the correlation id).
      if (named >= 0) {
        if (e.op < 0) ++L.by_external_id;
        e.op = named;
      } else if (ops_of_ext.contains(e.external_id)) {
        ++L.external_id_disagrees;
      }
    }
  }
  // GPU activity -> launch -> op.
  std::set<std::int64_t> launching;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    TraceEvent& k = ev[i];
    if (!k.on_gpu()) continue;
    ++L.gpu;
    if (auto r = runtime_of_corr.find(k.correlation);
        k.correlation >= 0 && r != runtime_of_corr.end()) {
      k.launch = r->second;
      k.op = ev[static_cast<std::size_t>(r->second)].op;
      launching.insert(r->second);
      ++L.gpu_to_launch;
    } else if (!any_runtime && k.external_id >= 0) {
      // No runtime calls recorded at all: the activity's own External id is the only link.
      if (auto x = ops_of_ext.find(k.external_id);
          x != ops_of_ext.end() && x->second.size() == 1 &&
          !launches_nothing(ev[static_cast<std::size_t>(x->second[0])].name))
        k.op = x->second[0];
      ++L.without_launch[kind_key(k.kind)];
    } else {
      ++L.without_launch[kind_key(k.kind)];
    }
    if (k.op >= 0)
      ++L.gpu_to_op;
    else if (k.launch >= 0)
      ++L.without_op[kind_key(k.kind)];
  }
  L.launches = static_cast<int>(launching.size());
  for (std::int64_t r : launching) L.launches_to_op += ev[static_cast<std::size_t>(r)].op >= 0;
}

std::vector<StepWindow> profile_steps(const Profile& p) {
  std::map<std::string, std::vector<StepWindow>> by_thread;
  for (const TraceEvent& e : p.events)
    if (e.kind == EventKind::Annotation && e.name.rfind("ProfilerStep#", 0) == 0)
      by_thread[e.pid + "/" + e.tid].push_back({e.name, e.ts_ns, e.end_ns()});
  const std::vector<StepWindow>* best = nullptr;
  for (const auto& [thread, steps] : by_thread)
    if (!best || steps.size() > best->size()) best = &steps;
  if (best) return *best;
  std::int64_t lo = 0, hi = 0;
  bool first = true;
  for (const TraceEvent& e : p.events) {
    if (e.kind == EventKind::Annotation || e.kind == EventKind::GpuAnnotation) continue;
    if (first || e.ts_ns < lo) lo = e.ts_ns;
    if (first || e.end_ns() > hi) hi = e.end_ns();
    first = false;
  }
  return {{"trace", lo, hi}};
}

}  // namespace placesim::calibration
