require 'json'

{{solution}}

def coreb_driver_convert(value, kind)
  if kind.start_with?('list:')
    value.map { |v| coreb_driver_convert(v, kind[5..]) }
  elsif kind == 'float' && value.is_a?(Integer)
    value.to_f
  else
    value
  end
end

def coreb_driver_main
  lines = $stdin.read.split("\n", -1)
  kinds = {{types}}
  abort("coreb driver: #{lines.length} argument lines, #{kinds.length} parameters") if lines.length < kinds.length
  args = kinds.each_with_index.map { |kind, i| coreb_driver_convert(JSON.parse(lines[i]), kind) }
  target = respond_to?(:{{method}}, true) ? self : Solution.new
  result = target.send(:{{method}}, *args)
  $stdout.write(JSON.generate(result) + "\n")
end

coreb_driver_main
