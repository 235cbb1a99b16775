#include <bits/stdc++.h>
using namespace std;

{{solution}}

namespace coreb_driver {

struct Json {
    enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
    bool boolean = false;
    std::string text;
    std::vector<Json> items;
};

[[noreturn]] inline void fail(const std::string& why) {
    std::cerr << "coreb driver: " << why << std::endl;
    std::exit(1);
}

struct Reader {
    const std::string& s;
    size_t i = 0;
    void ws() {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) ++i;
    }
    void utf8(std::string& out, unsigned long c) {
        if (c < 0x80) {
            out += char(c);
        } else if (c < 0x800) {
            out += char(0xC0 | (c >> 6));
            out += char(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            out += char(0xE0 | (c >> 12));
            out += char(0x80 | ((c >> 6) & 0x3F));
            out += char(0x80 | (c & 0x3F));
        } else {
            out += char(0xF0 | (c >> 18));
            out += char(0x80 | ((c >> 12) & 0x3F));
            out += char(0x80 | ((c >> 6) & 0x3F));
            out += char(0x80 | (c & 0x3F));
        }
    }
    unsigned long hex4() {
        if (i + 4 > s.size()) fail("bad \\u escape");
        unsigned long v = std::stoul(s.substr(i, 4), nullptr, 16);
        i += 4;
        return v;
    }
    Json value() {
        ws();
        if (i >= s.size()) fail("unexpected end of input");
        Json j;
        char c = s[i];
        if (c == '[') {
            j.kind = Json::Array;
            ++i;
            ws();
            if (i < s.size() && s[i] == ']') { ++i; return j; }
            while (true) {
                j.items.push_back(value());
                ws();
                if (i < s.size() && s[i] == ',') { ++i; continue; }
                if (i < s.size() && s[i] == ']') { ++i; return j; }
                fail("expected , or ]");
            }
        }
        if (c == '{') {
            j.kind = Json::Object;
            ++i;
            ws();
            if (i < s.size() && s[i] == '}') { ++i; return j; }
            while (true) {
                j.items.push_back(value());
                ws();
                if (i >= s.size() || s[i] != ':') fail("expected :");
                ++i;
                j.items.push_back(value());
                ws();
                if (i < s.size() && s[i] == ',') { ++i; continue; }
                if (i < s.size() && s[i] == '}') { ++i; return j; }
                fail("expected , or }");
            }
        }
        if (c == '"') {
            j.kind = Json::String;
            ++i;
            while (i < s.size() && s[i] != '"') {
                if (s[i] != '\\') { j.text += s[i++]; continue; }
                if (++i >= s.size()) fail("bad escape");
                char e = s[i++];
                switch (e) {
                    case 'n': j.text += '\n'; break;
                    case 't': j.text += '\t'; break;
                    case 'r': j.text += '\r'; break;
                    case 'b': j.text += '\b'; break;
                    case 'f': j.text += '\f'; break;
                    case 'u': {
                        unsigned long u = hex4();
                        if (u >= 0xD800 && u < 0xDC00 && i + 1 < s.size() && s[i] == '\\' && s[i + 1] == 'u') {
                            i += 2;
                            unsigned long low = hex4();
                            u = 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00);
                        }
                        utf8(j.text, u);
                        break;
                    }
                    default: j.text += e;
                }
            }
            if (i >= s.size()) fail("unterminated string");
            ++i;
            return j;
        }
        if (s.compare(i, 4, "true") == 0) { i += 4; j.kind = Json::Bool; j.boolean = true; return j; }
        if (s.compare(i, 5, "false") == 0) { i += 5; j.kind = Json::Bool; return j; }
        if (s.compare(i, 4, "null") == 0) { i += 4; return j; }
        size_t start = i;
        while (i < s.size() && (isdigit((unsigned char)s[i]) || s[i] == '-' || s[i] == '+' || s[i] == '.' || s[i] == 'e' || s[i] == 'E')) ++i;
        if (start == i) fail(std::string("unexpected character ") + c);
        j.kind = Json::Number;
        j.text = s.substr(start, i - start);
        return j;
    }
};

inline Json parse(const std::string& line) {
    Reader r{line};
    Json j = r.value();
    r.ws();
    if (r.i != line.size()) fail("trailing characters after a JSON value");
    return j;
}

// JSON value -> argument, by the parameter's own type.
template <class T>
typename std::enable_if<std::is_integral<T>::value && !std::is_same<T, bool>::value && !std::is_same<T, char>::value>::type from(const Json& j, T& v) {
    if (j.kind != Json::Number) fail("expected an integer");
    try {
        v = static_cast<T>(std::stoll(j.text));
    } catch (...) {
        fail("integer out of range: " + j.text);
    }
}
template <class T>
typename std::enable_if<std::is_floating_point<T>::value>::type from(const Json& j, T& v) {
    if (j.kind != Json::Number) fail("expected a number");
    v = static_cast<T>(std::stod(j.text));
}
inline void from(const Json& j, bool& v) {
    if (j.kind != Json::Bool) fail("expected a boolean");
    v = j.boolean;
}
inline void from(const Json& j, char& v) {
    if (j.kind != Json::String || j.text.size() != 1) fail("expected a one-character string");
    v = j.text[0];
}
inline void from(const Json& j, std::string& v) {
    if (j.kind != Json::String) fail("expected a string");
    v = j.text;
}
template <class T>
void from(const Json& j, std::vector<T>& v) {
    if (j.kind != Json::Array) fail("expected an array");
    v.clear();
    for (const Json& item : j.items) {
        T x{};
        from(item, x);
        v.push_back(std::move(x));
    }
}

// Result -> compact JSON.
template <class T>
typename std::enable_if<std::is_integral<T>::value && !std::is_same<T, bool>::value && !std::is_same<T, char>::value>::type write(std::string& out, T v) {
    out += std::to_string(v);
}
template <class T>
typename std::enable_if<std::is_floating_point<T>::value>::type write(std::string& out, T v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, static_cast<double>(v));
    out.append(buf, r.ptr);
}
inline void write(std::string& out, bool v) { out += v ? "true" : "false"; }
inline void write(std::string& out, const std::string& v) {
    out += '"';
    for (unsigned char c : v) {
        if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else out += char(c);
    }
    out += '"';
}
inline void write(std::string& out, const char* v) { write(out, std::string(v)); }
inline void write(std::string& out, char v) { write(out, std::string(1, v)); }
template <class T>
void write(std::string& out, const std::vector<T>& v) {
    out += '[';
    for (size_t k = 0; k < v.size(); ++k) {
        if (k) out += ',';
        if constexpr (std::is_same<T, bool>::value) {
            write(out, static_cast<bool>(v[k]));
        } else {
            write(out, v[k]);
        }
    }
    out += ']';
}

// Call the method with arguments read as its own parameter types (const or not).
template <class M>
struct Method;
template <class S, class R, class... A>
struct Method<R (S::*)(A...)> {
    using Args = std::tuple<typename std::decay<A>::type...>;
};
template <class S, class R, class... A>
struct Method<R (S::*)(A...) const> : Method<R (S::*)(A...)> {};

template <class S, class M>
auto call(S& self, M method, const std::vector<Json>& args) {
    typename Method<M>::Args values;
    if (args.size() < std::tuple_size<decltype(values)>::value) fail("fewer argument lines than parameters");
    std::apply([&](auto&... v) { size_t k = 0; (from(args[k++], v), ...); }, values);
    return std::apply([&](auto&... v) { return (self.*method)(v...); }, values);
}

}  // namespace coreb_driver

int main() {
    std::ios::sync_with_stdio(false);
    std::vector<coreb_driver::Json> coreb_args;
    std::string coreb_line;
    for (int k = 0; k < {{arity}} && std::getline(std::cin, coreb_line); ++k) coreb_args.push_back(coreb_driver::parse(coreb_line));
    auto coreb_solution = std::make_unique<Solution>();
    auto coreb_result = coreb_driver::call(*coreb_solution, &Solution::{{method}}, coreb_args);
    std::string coreb_out;
    coreb_driver::write(coreb_out, coreb_result);
    coreb_out += '\n';
    std::cout << coreb_out;
    return 0;
}
