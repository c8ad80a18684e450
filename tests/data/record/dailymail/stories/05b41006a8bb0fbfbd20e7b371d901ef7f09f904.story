A mountaineer from Norway has completed a daring winter climb of one of Patagonia’s most feared granite towers after nine nights on the rock face.

Henrik Aasland, 38, and his climbing partner, Lucía Ferreyra, reached the summit of Cerro Tormenta shortly after dawn on Saturday, their sponsor, Fjellvind Outdoor, said.

The pair hauled more than 90 kilograms of food, fuel and ropes and slept in a portaledge lashed to the granite as storms raked the mountain.

“We were frozen, hungry and very happy, and none of us could stop smiling,” Aasland wrote in a message sent from base camp in El Chaltén.

Mr Aasland, a former ski instructor, began climbing in Patagonia as a teenager.

Fellow Norwegians have hailed the climb as a landmark for mountaineers from their small country.

Ferreyra, who grew up in the foothills near El Chaltén, has often guided clients on its lower slopes.

Ferreyra called it unforgettable.

What drives climbers like Aasland to risk frostbite on such a remote peak?

Hanging tents allow climbers to sleep on sheer walls far above the ground.

Aasland wrote that the pair were frozen, hungry and very happy.

The route was attempted by Italian climber Marco Benvenuti, who turned back in a blizzard. Fjellvind's founder has promised a film about the expedition.

@highlight

Henrik Aasland and Lucía Ferreyra spent nine nights on the face of Cerro Tormenta

@highlight

The pair slept in a portaledge lashed to the granite as storms raged

@highlight

Their sponsor Fjellvind Outdoor says it is the first winter ascent of the route