{{solution}}

public class CorebMain {
    static final class CorebNumber {
        final String text;
        CorebNumber(String text) { this.text = text; }
    }

    static final class CorebReader {
        final String s;
        int i = 0;
        CorebReader(String s) { this.s = s; }

        void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        }

        Object value() {
            ws();
            if (i >= s.length()) throw new IllegalArgumentException("coreb driver: unexpected end of input");
            char c = s.charAt(i);
            if (c == '[') {
                java.util.ArrayList<Object> items = new java.util.ArrayList<>();
                i++;
                ws();
                if (i < s.length() && s.charAt(i) == ']') { i++; return items; }
                while (true) {
                    items.add(value());
                    ws();
                    if (i < s.length() && s.charAt(i) == ',') { i++; continue; }
                    if (i < s.length() && s.charAt(i) == ']') { i++; return items; }
                    throw new IllegalArgumentException("coreb driver: expected , or ]");
                }
            }
            if (c == '"') {
                StringBuilder sb = new StringBuilder();
                i++;
                while (i < s.length() && s.charAt(i) != '"') {
                    char d = s.charAt(i++);
                    if (d != '\\') { sb.append(d); continue; }
                    char e = s.charAt(i++);
                    switch (e) {
                        case 'n': sb.append('\n'); break;
                        case 't': sb.append('\t'); break;
                        case 'r': sb.append('\r'); break;
                        case 'b': sb.append('\b'); break;
                        case 'f': sb.append('\f'); break;
                        case 'u': sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                        default: sb.append(e);
                    }
                }
                i++;
                return sb.toString();
            }
            if (s.startsWith("true", i)) { i += 4; return Boolean.TRUE; }
            if (s.startsWith("false", i)) { i += 5; return Boolean.FALSE; }
            if (s.startsWith("null", i)) { i += 4; return null; }
            int start = i;
            while (i < s.length() && "+-.eE0123456789".indexOf(s.charAt(i)) >= 0) i++;
            if (start == i) throw new IllegalArgumentException("coreb driver: unexpected character " + c);
            return new CorebNumber(s.substring(start, i));
        }
    }

    /** A JSON value as an argument of the parameter's own (generic) type. */
    static Object corebConvert(Object v, java.lang.reflect.Type type) {
        if (type instanceof java.lang.reflect.ParameterizedType) {
            java.lang.reflect.ParameterizedType p = (java.lang.reflect.ParameterizedType) type;
            java.lang.reflect.Type item = p.getActualTypeArguments()[0];
            java.util.List<Object> out = new java.util.ArrayList<>();
            for (Object x : (java.util.List<?>) v) out.add(corebConvert(x, item));
            return out;
        }
        Class<?> c = (Class<?>) type;
        if (c.isArray()) {
            java.util.List<?> items = (java.util.List<?>) v;
            Object array = java.lang.reflect.Array.newInstance(c.getComponentType(), items.size());
            for (int k = 0; k < items.size(); k++) java.lang.reflect.Array.set(array, k, corebConvert(items.get(k), c.getComponentType()));
            return array;
        }
        if (c == long.class || c == Long.class) return Long.parseLong(((CorebNumber) v).text);
        if (c == int.class || c == Integer.class) return Integer.parseInt(((CorebNumber) v).text);
        if (c == double.class || c == Double.class) return Double.parseDouble(((CorebNumber) v).text);
        if (c == float.class || c == Float.class) return Float.parseFloat(((CorebNumber) v).text);
        if (c == boolean.class || c == Boolean.class) return (Boolean) v;
        if (c == char.class || c == Character.class) return ((String) v).charAt(0);
        if (c == String.class) return (String) v;
        if (java.util.List.class.isAssignableFrom(c)) return new java.util.ArrayList<Object>((java.util.List<?>) v);
        throw new IllegalArgumentException("coreb driver: unsupported parameter type " + c.getName());
    }

    static void corebWrite(StringBuilder out, Object v) {
        if (v == null) {
            out.append("null");
        } else if (v instanceof String || v instanceof Character) {
            String s = v.toString();
            out.append('"');
            for (int k = 0; k < s.length(); k++) {
                char c = s.charAt(k);
                if (c == '"') out.append("\\\"");
                else if (c == '\\') out.append("\\\\");
                else if (c == '\n') out.append("\\n");
                else if (c == '\t') out.append("\\t");
                else if (c == '\r') out.append("\\r");
                else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                else out.append(c);
            }
            out.append('"');
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            out.append(d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) + ".0" : Double.toString(d));
        } else if (v instanceof Number || v instanceof Boolean) {
            out.append(v.toString());
        } else if (v.getClass().isArray()) {
            out.append('[');
            int n = java.lang.reflect.Array.getLength(v);
            for (int k = 0; k < n; k++) {
                if (k > 0) out.append(',');
                corebWrite(out, java.lang.reflect.Array.get(v, k));
            }
            out.append(']');
        } else if (v instanceof Iterable) {
            out.append('[');
            boolean first = true;
            for (Object x : (Iterable<?>) v) {
                if (!first) out.append(',');
                first = false;
                corebWrite(out, x);
            }
            out.append(']');
        } else {
            throw new IllegalArgumentException("coreb driver: cannot write a " + v.getClass().getName());
        }
    }

    public static void main(String[] args) throws Throwable {
        java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.UTF_8), 1 << 16);
        java.lang.reflect.Method method = null;
        for (java.lang.reflect.Method m : Solution.class.getDeclaredMethods()) {
            if (m.getName().equals("{{method}}") && m.getParameterCount() == {{arity}}) method = m;
        }
        if (method == null) throw new IllegalStateException("coreb driver: Solution has no method {{method}} with {{arity}} parameters");
        method.setAccessible(true);
        java.lang.reflect.Type[] types = method.getGenericParameterTypes();
        Object[] values = new Object[types.length];
        for (int k = 0; k < types.length; k++) {
            String line = in.readLine();
            if (line == null) throw new IllegalArgumentException("coreb driver: fewer argument lines than parameters");
            CorebReader reader = new CorebReader(line);
            values[k] = corebConvert(reader.value(), types[k]);
        }
        java.lang.reflect.Constructor<Solution> make = Solution.class.getDeclaredConstructor();
        make.setAccessible(true);
        Object result;
        try {
            result = method.invoke(java.lang.reflect.Modifier.isStatic(method.getModifiers()) ? null : make.newInstance(), values);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
        }
        StringBuilder out = new StringBuilder();
        corebWrite(out, result);
        out.append('\n');
        java.io.PrintStream stdout = new java.io.PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, "UTF-8");
        stdout.print(out);
        stdout.flush();
    }
}
